// The container engine of this machine, as `npm run image` and the containers test use it: which one answers
// (docker, podman or buildah), the environment it runs with, and the images of the repository's services.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');

export const ENGINES = {
  docker: { probe: ['info', '--format', '{{.ServerVersion}}'] },
  podman: { probe: ['info', '--format', '{{.Version.Version}}'] },
  buildah: { probe: ['version'] },
};

/** The one Dockerfile every service's image is built from (the service is its SERVICE build argument). */
export const DOCKERFILE = 'Dockerfile';

/** A service's image as its package.json declares it: `"mds": { "image": { "ports": [<HTTP port>, ...] } }`. */
export function imageOf(service) {
  const file = join(root, 'services', service, 'package.json');
  if (!existsSync(file)) return undefined;
  const manifest = JSON.parse(readFileSync(file, 'utf8'));
  const image = manifest.mds?.image;
  if (!image) return undefined;
  if (!Array.isArray(image.ports) || image.ports.length === 0 || !image.ports.every(Number.isInteger)) {
    throw new Error(
      `services/${service}/package.json: mds.image.ports must list the service's ports, HTTP first`,
    );
  }
  return { ports: image.ports, description: manifest.description ?? '' };
}

/** Every service with an image: those whose package.json declares one (a new service is picked up by adding it). */
export function imageServices() {
  return readdirSync(join(root, 'services'))
    .filter((name) => imageOf(name))
    .sort();
}

/** The Node the project pins (the `node` devDependency), which every image runs. */
export function pinnedNode() {
  return JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).devDependencies.node;
}

/** The npm the project pins (`packageManager`), which a locally made base carries. */
export function pinnedNpm() {
  const manager = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager;
  return manager.replace(/^npm@/, '');
}

function onPath(program) {
  return (process.env.PATH ?? '').split(delimiter).some((dir) => dir && existsSync(join(dir, program)));
}

/**
 * The environment podman and buildah run with. As root on some machines podman cannot raise its own file limit
 * (`crun: setrlimit RLIMIT_NOFILE: Operation not permitted`) and crun refuses a mixed cgroup v1/v2 host
 * (`cgroups in hybrid mode not supported`): unless CONTAINERS_CONF is set, a containers.conf with fixed ulimits,
 * and runc where it is installed, is written to .cache/containers and used.
 */
export function engineEnv(engine) {
  if (engine === 'docker' || process.env.CONTAINERS_CONF) return { ...process.env };
  const dir = join(root, '.cache', 'containers');
  const file = join(dir, 'containers.conf');
  const conf = [
    '# Written by scripts/images/engine.mjs (see there why); set CONTAINERS_CONF to use another.',
    '[containers]',
    'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]',
    ...(onPath('runc') ? ['[engine]', 'runtime = "runc"'] : []),
    '',
  ].join('\n');
  mkdirSync(dir, { recursive: true });
  if (!existsSync(file) || readFileSync(file, 'utf8') !== conf) writeFileSync(file, conf);
  return { ...process.env, CONTAINERS_CONF: file };
}

/** An engine that is installed and can build now (docker's client alone, without a daemon, cannot). */
export function usable(engine) {
  const result = spawnSync(engine, ENGINES[engine].probe, {
    stdio: 'ignore',
    timeout: 15_000,
    env: engineEnv(engine),
  });
  return result.status === 0;
}

/** The first engine that answers, of `candidates` (docker, podman, buildah by default), or undefined. */
export function findEngine(candidates = Object.keys(ENGINES)) {
  return candidates.find(usable);
}

/** The image name of a service: <MDS_IMAGE_REGISTRY/>mds/<service>:<tag>. */
export function imageName(service, tag, registry = process.env.MDS_IMAGE_REGISTRY) {
  const prefix = registry ? `${registry.replace(/\/$/, '')}/` : '';
  return `${prefix}mds/${service}:${tag}`;
}
