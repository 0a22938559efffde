// Run on turbo prune's output: keeps only the workspaces an image needs. `turbo prune` keeps every workspace of
// the service's package graph, test helpers included (a devDependency on @mds/local-infra brings testcontainers
// and a Docker client, one on @mds/test-e2e the whole harness), and `npm prune --omit=dev` would keep whatever a
// kept workspace depends on. So this drops the other workspaces, from the folder and from the root package.json's
// workspaces, and the devDependencies and peerDependencies naming them. Two passes:
//   build: in the prune stage (on `json/` and `full/`), what compiles the service: its production dependencies
//          and the workspaces they name as peers (@mds/service-kit compiles ./platform against @mds/db and
//          @mds/kafka, optional peers a service without PostgreSQL never loads);
//   run:   in the build stage after the build, before `npm prune --omit=dev`: its production dependencies only,
//          so a peer the service does not load leaves the image with its own dependencies (knex, pg, kafkajs).
// A change to a dropped workspace does not invalidate the image's install and build layers.
//   node production-workspaces.mjs <pruned folder> @mds/<service> build|run
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [root, service, pass] = process.argv.slice(2);
if (pass !== 'build' && pass !== 'run') throw new Error(`the pass is build or run, not ${pass}`);
const read = (file) => JSON.parse(readFileSync(file, 'utf8'));
const write = (file, value) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
const manifest = read(join(root, 'package.json'));
const byName = new Map(manifest.workspaces.map((dir) => [read(join(root, dir, 'package.json')).name, dir]));
const keep = new Set();
const visit = (name) => {
  const dir = byName.get(name);
  if (!dir || keep.has(dir)) return;
  keep.add(dir);
  const pkg = read(join(root, dir, 'package.json'));
  const needed = {
    ...pkg.dependencies,
    ...pkg.optionalDependencies,
    ...(pass === 'build' ? pkg.peerDependencies : {}),
  };
  for (const dependency of Object.keys(needed)) visit(dependency);
};
if (!byName.has(service)) throw new Error(`no workspace ${service} in ${root}`);
visit(service);
const dropped = [...byName].filter(([, dir]) => !keep.has(dir)).map(([name]) => name);
for (const name of dropped) rmSync(join(root, byName.get(name)), { recursive: true, force: true });
manifest.workspaces = manifest.workspaces.filter((dir) => keep.has(dir));
write(join(root, 'package.json'), manifest);
for (const dir of keep) {
  const file = join(root, dir, 'package.json');
  if (!existsSync(file)) continue;
  const pkg = read(file);
  for (const name of dropped) {
    delete pkg.devDependencies?.[name];
    delete pkg.peerDependencies?.[name];
    delete pkg.peerDependenciesMeta?.[name];
  }
  write(file, pkg);
}
console.log(`[production-workspaces] ${service} (${pass}): dropped ${dropped.join(', ') || 'nothing'}`);
