// Run in an image's prune stage on turbo prune's output (`json/` and `full/`): keeps only the workspaces the
// service needs at run time. `turbo prune` keeps every workspace of the service's package graph, test helpers
// included (a devDependency on @mds/local-infra brings testcontainers and a Docker client, one on
// @mds/test-e2e the whole harness), and `npm prune --omit=dev` would keep whatever a kept workspace depends on.
// So this drops the workspaces outside the service's production dependencies, from the folder and from the root
// package.json's workspaces, and the devDependencies naming them; the image then never installs, builds or
// ships them, and a change to them does not invalidate the image's install and build layers.
//   node production-workspaces.mjs <pruned folder> @mds/<service>
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [root, service] = process.argv.slice(2);
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
  for (const dependency of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies }))
    visit(dependency);
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
  for (const name of dropped) delete pkg.devDependencies?.[name];
  write(file, pkg);
}
console.log(`[production-workspaces] ${service}: dropped ${dropped.join(', ') || 'nothing'}`);
