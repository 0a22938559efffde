// `npm run image -- <service> [--tag <tag>] [--engine docker|podman|buildah] [--print]`: builds one service's
// image from services/<service>/Dockerfile with the repository root as the build context, with whichever
// container engine is here (docker, then podman, then buildah), and says so plainly when there is none.
// --print shows the command instead of running it. The image is <MDS_IMAGE_REGISTRY/>mds/<service>:<tag>.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

const root = join(import.meta.dirname, '..');
const ENGINES = {
  docker: { probe: ['info', '--format', '{{.ServerVersion}}'], build: ['build'] },
  podman: { probe: ['info', '--format', '{{.Version.Version}}'], build: ['build'] },
  buildah: { probe: ['version'], build: ['build'] },
};

function fail(code, message) {
  console.error(`[image] ${message}`);
  process.exit(code);
}

const services = readdirSync(join(root, 'services'))
  .filter((name) => existsSync(join(root, 'services', name, 'Dockerfile')))
  .sort();

let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      tag: { type: 'string', default: 'dev' },
      engine: { type: 'string' },
      print: { type: 'boolean', default: false },
    },
  });
} catch (error) {
  fail(2, error.message);
}
const { values, positionals } = parsed;
const [service] = positionals;
if (!service || positionals.length > 1) {
  fail(
    2,
    `usage: npm run image -- <service> [--tag <tag>] [--engine docker|podman|buildah] [--print]\n  services: ${services.join(', ')}`,
  );
}
if (!services.includes(service)) {
  fail(2, `no Dockerfile for "${service}": services with an image are ${services.join(', ')}`);
}
if (values.engine && !(values.engine in ENGINES))
  fail(2, `unknown engine "${values.engine}": docker, podman or buildah`);

/** An engine that is installed and can build now (docker's client alone, without a daemon, cannot). */
function usable(engine) {
  const result = spawnSync(engine, ENGINES[engine].probe, { stdio: 'ignore', timeout: 15_000 });
  return result.status === 0;
}

const registry = process.env.MDS_IMAGE_REGISTRY
  ? `${process.env.MDS_IMAGE_REGISTRY.replace(/\/$/, '')}/`
  : '';
const image = `${registry}mds/${service}:${values.tag}`;
const dockerfile = join('services', service, 'Dockerfile');

const candidates = values.engine ? [values.engine] : Object.keys(ENGINES);
const engine = values.print ? (values.engine ?? 'docker') : candidates.find(usable);
if (!engine) {
  fail(
    3,
    `no container engine can build here (tried ${candidates.join(', ')}: not installed, or no running daemon). ` +
      `Build ${dockerfile} elsewhere with the repository root as context, e.g. ` +
      `docker build -f ${dockerfile} -t ${image} .`,
  );
}
const args = [...ENGINES[engine].build, '-f', dockerfile, '-t', image, '.'];
if (values.print) {
  console.log([engine, ...args].join(' '));
  process.exit(0);
}
console.error(`[image] ${engine} ${args.join(' ')}`);
const result = spawnSync(engine, args, { cwd: root, stdio: 'inherit' });
process.exit(result.status ?? 1);
