# syntax=docker/dockerfile:1
# The image of every service: one Dockerfile, the service named by a build argument. Built from the repository
# root (the build context):
#   npm run image -- <service>   (or --all), which passes SERVICE, HTTP_PORT and PORTS from the service's
#   package.json ("mds": { "image": { "ports": [...] } }), or by hand:
#   docker build --build-arg SERVICE=gateway --build-arg HTTP_PORT=8080 -t mds/gateway:dev .
# The base is the Node the project pins (the `node` devDependency); npm run image builds a local one where it
# cannot be pulled.
ARG NODE_IMAGE=docker.io/library/node:24.21.0-trixie-slim

# 1. Only the workspaces the service needs at run time, with a lockfile pruned to them (turbo prune, then
#    scripts/images/production-workspaces.mjs drops the workspaces only tests use): a change to anything else
#    does not invalidate the install and build layers below. turbo itself comes from the repository's lockfile
#    (its version and integrity, and its platform binary's: scripts/images/locked-tool.mjs), installed with
#    npm ci before the sources are copied, so that layer is reused until the lockfile changes.
FROM ${NODE_IMAGE} AS prune
ARG SERVICE
RUN test -n "${SERVICE}" || { echo 'the build argument SERVICE is required, e.g. --build-arg SERVICE=gateway' >&2; exit 2; }
WORKDIR /tools
COPY package-lock.json scripts/images/locked-tool.mjs ./
RUN node locked-tool.mjs package-lock.json turbo . && npm ci --no-audit --no-fund
WORKDIR /repo
COPY . .
RUN test -f "services/${SERVICE}/package.json" || { echo "no service ${SERVICE} under services/" >&2; exit 2; } \
  && /tools/node_modules/.bin/turbo prune "@mds/${SERVICE}" --docker --out-dir /pruned \
  && node scripts/images/production-workspaces.mjs /pruned/json "@mds/${SERVICE}" build \
  && node scripts/images/production-workspaces.mjs /pruned/full "@mds/${SERVICE}" build

# 2. Install (dev dependencies too: the build needs TypeScript, the proto generator and, for the dashboard, Vite
#    with the web application's libraries), build, then drop the dev dependencies, the workspaces only the build
#    compiles against, and what only the build reads.
FROM ${NODE_IMAGE} AS build
ARG SERVICE
WORKDIR /app
COPY --from=prune /pruned/json/ ./
COPY scripts/check-node.mjs scripts/check-node.mjs
COPY scripts/images/production-workspaces.mjs scripts/images/production-workspaces.mjs
# Exactly what the pruned lockfile says (npm ci refuses a lockfile out of step with the package.json files).
RUN npm ci --no-audit --no-fund
COPY --from=prune /pruned/full/ ./
COPY tsconfig.base.json ./
COPY proto ./proto
RUN npx turbo run build "--filter=@mds/${SERVICE}" \
  && node scripts/images/production-workspaces.mjs . "@mds/${SERVICE}" run \
  && npm prune --omit=dev --no-audit --no-fund \
  && find node_modules -mindepth 1 -maxdepth 1 -type d -empty -delete \
  && rm -rf node_modules/.cache .turbo proto scripts \
  && find . -path ./node_modules -prune -o \( -name '*.tsbuildinfo' -o -name '*.d.ts.map' \) -print | xargs rm -f

# 3. The runtime: production dependencies and built code only, owned by root and run by an unprivileged user,
#    under tini so that SIGTERM reaches node and the service stops gracefully. npm, npx and yarn are of no use
#    at run time and leave with their dependencies.
FROM ${NODE_IMAGE}
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/* \
  && rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
    /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
ARG SERVICE
# The service's HTTP port (its config's default; the chart sets it too), which the health check asks; PORTS are
# all the ports it listens on (space-separated), for EXPOSE.
ARG HTTP_PORT=8080
ARG PORTS=${HTTP_PORT}
ENV NODE_ENV=production HTTP_PORT=${HTTP_PORT}
WORKDIR /app
COPY --from=build /app ./
WORKDIR /app/services/${SERVICE}
USER 1000:1000
EXPOSE ${PORTS}
HEALTHCHECK --interval=15s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.HTTP_PORT + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/main.js"]
# Last, so that a new revision changes only the image's metadata: npm run image sets them.
ARG MDS_VERSION=dev
ARG MDS_REVISION=unknown
ARG MDS_SOURCE=https://example.invalid/messenger-delivery
ARG MDS_DESCRIPTION="a service of the messenger delivery service"
LABEL org.opencontainers.image.title="mds/${SERVICE}" \
  org.opencontainers.image.description="${MDS_DESCRIPTION}" \
  org.opencontainers.image.source="${MDS_SOURCE}" \
  org.opencontainers.image.revision="${MDS_REVISION}" \
  org.opencontainers.image.version="${MDS_VERSION}"
