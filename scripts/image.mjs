// `npm run image -- <service>... | --all [--tag <tag>] [--engine docker|podman|buildah] [--print | --remove]`: builds services'
// images from the one Dockerfile at the repository root (the build context), the service and its ports given as
// build arguments (SERVICE, HTTP_PORT, PORTS: from the service's package.json, "mds": { "image": { "ports" } }),
// with whichever container engine is here (docker, then podman, then buildah), and says so plainly when there is
// none.
//
// The base is node:<pinned Node>-trixie-slim. Where it is neither present nor can be pulled (no registry
// reachable), a local base of the same content is made once (scripts/images/node-base.sh: Debian trixie by
// debootstrap, Node from the npm registry) and reused while its inputs are unchanged: its tag carries their hash.
// Each image is labelled (OCI: source, revision, version), and its size is printed against its budget; an image
// over budget fails the build. --print shows the build commands instead of running them.
// --remove removes instead what builds for the tag made: the services' images of that tag, and every dangling image
// (no tag, no child) labelled with that version, which is each build stage's image and each layer under it, and
// the images a later build of the tag took the tag from. The base and other tags' layers stay.
// The image is <MDS_IMAGE_REGISTRY/>mds/<service>:<tag>.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  DOCKERFILE,
  ENGINES,
  imageOf,
  engineEnv,
  findEngine,
  imageName,
  imageServices,
  pinnedNode,
  pinnedNpm,
  root,
} from './images/engine.mjs';

/**
 * Size budgets in MB (as the engine reports an image's size; deploy/README.md lists them with what they measure).
 * The base (Debian trixie slim and Node) is about 220 MB of it: Node's binary alone is 120 MB.
 */
const BUDGET_MB = { default: 330, 'messenger-simulator': 300 };

function fail(code, message) {
  console.error(`[image] ${message}`);
  process.exit(code);
}
const log = (line) => console.error(`[image] ${line}`);

const services = imageServices();
let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      all: { type: 'boolean', default: false },
      tag: { type: 'string', default: 'dev' },
      engine: { type: 'string' },
      print: { type: 'boolean', default: false },
      remove: { type: 'boolean', default: false },
    },
  });
} catch (error) {
  fail(2, error.message);
}
const { values, positionals } = parsed;
const usage = `usage: npm run image -- <service>... | --all [--tag <tag>] [--engine docker|podman|buildah] [--print | --remove]\n  services: ${services.join(', ')}`;
if (values.all === positionals.length > 0 || (values.print && values.remove)) fail(2, usage);
const wanted = values.all ? services : positionals;
for (const service of wanted) {
  if (!services.includes(service)) {
    fail(
      2,
      `no image for "${service}" (its package.json declares none): services with an image are ${services.join(', ')}`,
    );
  }
}
if (values.engine && !(values.engine in ENGINES))
  fail(2, `unknown engine "${values.engine}": docker, podman or buildah`);

const nodeVersion = pinnedNode();
const officialBase = `docker.io/library/node:${nodeVersion}-trixie-slim`;
const candidates = values.engine ? [values.engine] : Object.keys(ENGINES);
const engine = values.print ? (values.engine ?? 'docker') : findEngine(candidates);
if (!engine) {
  fail(
    3,
    `no container engine can build here (tried ${candidates.join(', ')}: not installed, or no running daemon). ` +
      `Build ${DOCKERFILE} elsewhere with the repository root as context, e.g. ` +
      shellLine(['docker', ...buildArgs(wanted[0], officialBase, 'docker')]),
  );
}
const env = engineEnv(engine);
const quiet = { cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] };

function imageExists(image) {
  const args = engine === 'buildah' ? ['inspect', '--type', 'image', image] : ['image', 'inspect', image];
  return spawnSync(engine, args, quiet).status === 0;
}

function git(...args) {
  const result = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : '';
}

/** The base to build on: the official image if here or pullable, else a local one of the same content. */
function base() {
  if (imageExists(officialBase)) return officialBase;
  const pull = spawnSync(engine, ['pull', officialBase], { ...quiet, timeout: 180_000 });
  if (pull.status === 0) return officialBase;
  const why = (pull.stderr || pull.error?.message || '').trim().split('\n').at(-1);
  const script = join(root, 'scripts', 'images', 'node-base.sh');
  const inputs = createHash('sha256')
    .update(readFileSync(script))
    .update(`${nodeVersion}\n${pinnedNpm()}\n${process.env.MDS_DEBIAN_MIRROR ?? ''}\n`)
    .update(
      existsSync('/etc/ssl/certs/ca-certificates.crt')
        ? readFileSync('/etc/ssl/certs/ca-certificates.crt')
        : '',
    )
    .digest('hex')
    .slice(0, 12);
  const local = `localhost/mds/node-base:${nodeVersion}-trixie-${inputs}`;
  if (imageExists(local)) {
    log(`cannot pull ${officialBase} (${why}): using the local base ${local} (made earlier, same content)`);
    return local;
  }
  log(
    `cannot pull ${officialBase} (${why}): making a local base ${local} (scripts/images/node-base.sh, about a minute)`,
  );
  const began = Date.now();
  const made = spawnSync('bash', [script, engine, local, nodeVersion, pinnedNpm()], {
    cwd: root,
    env,
    stdio: 'inherit',
  });
  if (made.status !== 0) fail(1, `could not make the local base (exit ${made.status ?? made.signal})`);
  log(`local base ${local} made in ${((Date.now() - began) / 1000).toFixed(0)} s`);
  return local;
}

/** The image's size in MB as the engine reports it (buildah only says it in words: "302 MB"). */
function imageSizeMb(image) {
  if (engine === 'buildah') {
    const [info] = JSON.parse(spawnSync(engine, ['images', '--json', image], quiet).stdout || '[]');
    const size = /([\d.]+)\s*(kB|MB|GB)/.exec(info?.size ?? '');
    return size ? Math.round(Number(size[1]) * { kB: 1e-3, MB: 1, GB: 1e3 }[size[2]]) : NaN;
  }
  const bytes = Number(
    spawnSync(engine, ['image', 'inspect', '--format', '{{.Size}}', image], quiet).stdout.trim(),
  );
  return Math.round(bytes / 1e6);
}

function labels(source, revision) {
  const oci = { revision, version: values.tag, ...(source ? { source } : {}) };
  return Object.entries(oci).flatMap(([key, value]) => [
    '--label',
    `org.opencontainers.image.${key}=${value}`,
  ]);
}

/** A command line as a shell reads it: arguments with spaces or quotes are quoted. */
function shellLine(args) {
  return args
    .map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`))
    .join(' ');
}

function buildArgs(service, nodeImage, buildEngine = engine) {
  const { ports, description } = imageOf(service);
  const dirty = git('status', '--porcelain') ? '-dirty' : '';
  const source = process.env.MDS_IMAGE_SOURCE || git('remote', 'get-url', 'origin');
  const revision = (git('rev-parse', 'HEAD') || 'unknown') + dirty;
  return [
    'build',
    // podman and buildah write OCI images by default, which have no HEALTHCHECK: docker format keeps it.
    ...(buildEngine === 'docker' ? [] : ['--format', 'docker']),
    '-f',
    DOCKERFILE,
    '-t',
    imageName(service, values.tag),
    ...(nodeImage === officialBase ? [] : ['--build-arg', `NODE_IMAGE=${nodeImage}`]),
    '--build-arg',
    `SERVICE=${service}`,
    '--build-arg',
    `HTTP_PORT=${ports[0]}`,
    '--build-arg',
    `PORTS=${ports.join(' ')}`,
    '--build-arg',
    `MDS_DESCRIPTION=${description}`,
    '--build-arg',
    `MDS_VERSION=${values.tag}`,
    '--build-arg',
    `MDS_REVISION=${revision}`,
    ...(source ? ['--build-arg', `MDS_SOURCE=${source}`] : []),
    // The same as labels too: buildah's layer cache (podman 4.3) reuses the Dockerfile's LABEL step whatever the
    // build arguments, which would leave an image labelled with an older revision.
    ...labels(source, revision),
    '.',
  ];
}

/**
 * --remove: the tag's images, then the dangling images labelled with its version, round by round (a removed image
 * leaves its parent layer dangling; the engine removes such parents itself where it can). Nothing is forced: an
 * image a container uses, or a layer under an image of another tag (a later build that took it from the cache),
 * stays. Removing what is not there is no error.
 */
function removeBuilt() {
  let images = 0;
  let deleted = 0;
  // Each engine names every image it deletes (a parent layer too) by its full id, one a line.
  const countDeleted = (result) => result.stdout.split('\n').filter((l) => /[0-9a-f]{64}/.test(l)).length;
  for (const service of wanted) {
    const image = imageName(service, values.tag);
    if (!imageExists(image)) continue;
    const removed = spawnSync(engine, ['rmi', image], quiet);
    if (removed.status !== 0) fail(1, `could not remove ${image}: ${removed.stderr.trim()}`);
    images += 1;
    deleted += countDeleted(removed);
  }
  const label = `org.opencontainers.image.version=${values.tag}`;
  const dangling = () => {
    const listed = spawnSync(
      engine,
      ['images', '-q', '--no-trunc', '--filter', 'dangling=true', '--filter', `label=${label}`],
      quiet,
    );
    if (listed.status !== 0)
      fail(1, `could not list the dangling images of ${label}: ${listed.stderr.trim()}`);
    return [...new Set(listed.stdout.split('\n').filter(Boolean))];
  };
  const seen = new Set();
  let ids = dangling();
  let why = '';
  while (ids.some((id) => !seen.has(id))) {
    for (const id of ids) seen.add(id);
    const removed = spawnSync(engine, ['rmi', ...ids], quiet);
    deleted += countDeleted(removed);
    why = removed.stderr.trim();
    ids = dangling();
  }
  log(
    `removed the ${images} images of ${values.tag} and the dangling images labelled ${label}: ` +
      `${deleted} images and layers deleted` +
      (ids.length > 0 ? `; ${ids.length} dangling stay: ${why}` : ''),
  );
}

if (values.remove) {
  removeBuilt();
  process.exit(0);
}

if (values.print) {
  for (const service of wanted) console.log(shellLine([engine, ...buildArgs(service, officialBase)]));
  process.exit(0);
}

const nodeImage = base();
log(`base ${nodeImage}`);
const built = [];
for (const service of wanted) {
  const args = buildArgs(service, nodeImage);
  log(shellLine([engine, ...args]));
  const began = Date.now();
  const result = spawnSync(engine, args, { cwd: root, env, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) fail(result.status ?? 1, `building ${service} failed`);
  const image = imageName(service, values.tag);
  const sizeMb = imageSizeMb(image);
  const budget = BUDGET_MB[service] ?? BUDGET_MB.default;
  built.push({ service, image, seconds: (Date.now() - began) / 1000, sizeMb, budget });
}
for (const b of built) {
  log(
    `${b.image}: ${Number.isFinite(b.sizeMb) ? `${b.sizeMb} MB` : 'size unknown'} (budget ${b.budget} MB), built in ${b.seconds.toFixed(0)} s`,
  );
}
const over = built.filter((b) => b.sizeMb > b.budget);
if (over.length > 0) {
  fail(1, `over budget: ${over.map((b) => `${b.service} ${b.sizeMb} MB > ${b.budget} MB`).join(', ')}`);
}
