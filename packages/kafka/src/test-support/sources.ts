import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..', '..', '..');

function sources(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (['node_modules', 'dist', 'gen'].includes(entry)) continue;
    if (statSync(path).isDirectory()) found.push(...sources(path));
    else if (entry.endsWith('.ts') && !entry.includes('.test.')) found.push(path);
  }
  return found;
}

/** Every production `.ts` under the packages' and services' `src`, but this package's (what it guards others from). */
export function productionSourcesOutsideKafka(): string[] {
  return ['packages', 'services'].flatMap((top) =>
    readdirSync(join(root, top))
      .filter((w) => !(top === 'packages' && w === 'kafka'))
      .flatMap((w) => {
        try {
          return sources(join(root, top, w, 'src'));
        } catch {
          return [];
        }
      }),
  );
}
