// The rule that keeps the test kits from reaching up: packages sit below services, so no package
// (packages/*) depends on a service (services/*), in its package.json or by an import; no service depends
// on another (their tests start the others as processes, see services.ts); and no service depends on the
// end-to-end suite (@mds/test-e2e), which sits above them all.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

interface Workspace {
  name: string;
  dir: string;
  kind: 'package' | 'service';
}

const dependencyFields = ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies'];
const sourceExtensions = /\.(?:[cm]?[jt]s|tsx)$/;
const skippedDirectories = new Set(['node_modules', 'dist', 'gen', 'test-artifacts', 'coverage']);
// from '...', import '...', import('...'), require('...'), export ... from '...'
const specifierPattern = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\s*\(\s*)(['"])([^'"\n]+)\1/g;

function workspaces(root: string): Workspace[] {
  return (['packages', 'services'] as const).flatMap((area) => {
    const base = join(root, area);
    if (!existsSync(base)) return [];
    return readdirSync(base)
      .map((entry) => join(base, entry))
      .filter((dir) => existsSync(join(dir, 'package.json')))
      .map((dir) => ({
        name: (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string }).name,
        dir,
        kind: area === 'packages' ? ('package' as const) : ('service' as const),
      }));
  });
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    if (skippedDirectories.has(entry)) return [];
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return sourceExtensions.test(entry) && !entry.endsWith('.d.ts') ? [path] : [];
  });
}

/** The import specifiers of one source file. */
export function specifiersOf(source: string): string[] {
  return [...source.matchAll(specifierPattern)].map((m) => m[2]!);
}

const namesPackage = (specifier: string, name: string) =>
  specifier === name || specifier.startsWith(`${name}/`);

interface Rule {
  /** The workspace it must not depend on: its package name and folder. */
  name: string;
  dir: string;
  why: string;
}

function rulesFor(workspace: Workspace, services: Workspace[], root: string): Rule[] {
  if (workspace.kind === 'package') {
    return services.map((s) => ({ name: s.name, dir: s.dir, why: 'a package depends on a service' }));
  }
  return [
    ...services
      .filter((s) => s.name !== workspace.name)
      .map((s) => ({ name: s.name, dir: s.dir, why: 'a service depends on another service' })),
    { name: '@mds/test-e2e', dir: join(root, 'test-e2e'), why: 'a service depends on @mds/test-e2e' },
  ];
}

/** Every breach of the rule in the repository at `root`, one line each (none: empty). */
export function dependencyViolations(root: string): string[] {
  const all = workspaces(root);
  const services = all.filter((w) => w.kind === 'service');
  const violations: string[] = [];
  for (const workspace of all) {
    const rules = rulesFor(workspace, services, root);
    const manifest = JSON.parse(readFileSync(join(workspace.dir, 'package.json'), 'utf8')) as Record<
      string,
      Record<string, string> | undefined
    >;
    for (const field of dependencyFields) {
      for (const dependency of Object.keys(manifest[field] ?? {})) {
        const rule = rules.find((r) => r.name === dependency);
        if (rule) violations.push(`${workspace.name}: ${field} has ${dependency} (${rule.why})`);
      }
    }
    for (const file of sourceFiles(workspace.dir)) {
      const where = relative(root, file);
      for (const specifier of specifiersOf(readFileSync(file, 'utf8'))) {
        const target = specifier.startsWith('.') ? resolve(dirname(file), specifier) : undefined;
        const rule = rules.find((r) =>
          target === undefined ? namesPackage(specifier, r.name) : target.startsWith(r.dir + sep),
        );
        if (rule) violations.push(`${where}: imports ${specifier} (${rule.why})`);
      }
    }
  }
  return violations;
}
