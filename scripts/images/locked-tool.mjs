// Run in an image's first stage: a folder from which `npm ci` installs one tool of the repository's lockfile
// (turbo) exactly as locked (the version and the integrity of the tool and of its platform packages), without
// installing the rest of the root's dependencies and without asking the registry which version to take.
//   node locked-tool.mjs <package-lock.json> <package> <folder>
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [lockFile, name, folder] = process.argv.slice(2);
if (!lockFile || !name || !folder) {
  console.error('usage: node locked-tool.mjs <package-lock.json> <package> <folder>');
  process.exit(2);
}
const lock = JSON.parse(readFileSync(lockFile, 'utf8'));
const tool = lock.packages[`node_modules/${name}`];
if (!tool) throw new Error(`${name} is not in ${lockFile}`);
if (!tool.integrity) throw new Error(`${lockFile} has no integrity for ${name}: it would not be locked`);
// The tool and what it depends on (turbo: its platforms' binaries, optional), as the lockfile has them.
const wanted = new Set([name]);
for (let grew = true; grew;) {
  grew = false;
  for (const dependency of [...wanted]) {
    const entry = lock.packages[`node_modules/${dependency}`];
    for (const next of Object.keys({ ...entry.dependencies, ...entry.optionalDependencies })) {
      if (!wanted.has(next)) {
        wanted.add(next);
        grew = true;
      }
    }
  }
}
const packages = { '': { name: 'locked-tool', dependencies: { [name]: tool.version } } };
for (const dependency of [...wanted].sort()) {
  const { dev: _dev, devOptional: _devOptional, ...entry } = lock.packages[`node_modules/${dependency}`];
  packages[`node_modules/${dependency}`] = entry;
}
mkdirSync(folder, { recursive: true });
const write = (file, value) => writeFileSync(join(folder, file), `${JSON.stringify(value, null, 2)}\n`);
write('package.json', { name: 'locked-tool', private: true, dependencies: { [name]: tool.version } });
write('package-lock.json', { name: 'locked-tool', lockfileVersion: 3, requires: true, packages });
console.log(`[locked-tool] ${name}@${tool.version} and ${wanted.size - 1} of its packages from ${lockFile}`);
