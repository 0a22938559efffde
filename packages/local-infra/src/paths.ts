import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest folder above this module whose package.json declares workspaces. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { workspaces?: unknown };
      if (pkg.workspaces) return dir;
    }
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error('local-infra: cannot find the repository root (package.json with workspaces)');
    dir = parent;
  }
}

/** Downloaded artefacts kept between runs (Kafka jars). */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.MDS_CACHE_DIR ?? join(repoRoot(), '.cache'));
}

/** Data and state of started infrastructure, one folder per named environment ("dev", "test-..."). */
export function runDir(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.MDS_RUN_DIR ?? join(repoRoot(), '.run'), name);
}
