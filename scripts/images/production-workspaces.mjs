// Run in an image's build stage, after the build: keeps only the workspaces the service needs at run time.
// `turbo prune` keeps every workspace of the service's package graph, test helpers included (a devDependency on
// @mds/local-infra brings testcontainers and a Docker client), and `npm prune --omit=dev` keeps what any kept
// workspace depends on. So this drops the workspaces outside the service's production dependencies from the
// root package.json and from the tree; `npm prune --omit=dev` after it removes their dependencies too.
//   node production-workspaces.mjs @mds/<service>
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = process.cwd();
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const byName = new Map(
  manifest.workspaces.map((dir) => [
    JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')).name,
    dir,
  ]),
);
const keep = new Set();
const visit = (name) => {
  const dir = byName.get(name);
  if (!dir || keep.has(dir)) return;
  keep.add(dir);
  const pkg = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
  for (const dependency of Object.keys({ ...pkg.dependencies, ...pkg.optionalDependencies }))
    visit(dependency);
};
const [service] = process.argv.slice(2);
if (!byName.has(service)) throw new Error(`no workspace ${service}`);
visit(service);
for (const [name, dir] of byName) {
  if (keep.has(dir)) continue;
  rmSync(join(root, dir), { recursive: true, force: true });
  rmSync(join(root, 'node_modules', name), { recursive: true, force: true });
  console.log(`[production-workspaces] dropped ${name} (${dir}): not a production dependency of ${service}`);
}
manifest.workspaces = manifest.workspaces.filter((dir) => keep.has(dir));
delete manifest.devDependencies;
writeFileSync(join(root, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
