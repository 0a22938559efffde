// Every consumer group is made by createEventConsumer, whose dead-letter sink is required: what poison.int.test.ts
// shows of it holds for each. What remains to check is that no service's group keeps what it sets aside
// nowhere: NO_DEAD_LETTER_TABLE is for tools and tests (readToEnd, collectors), never a service's group.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');

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

describe("every service's consumer groups", () => {
  it("set aside in their service's dead_letters table, none nowhere", () => {
    const files = ['packages', 'services'].flatMap((top) =>
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
    const consumers = files.filter((f) =>
      /createEventConsumer|forgottenConsumer\(/.test(readFileSync(f, 'utf8')),
    );
    expect(consumers.length).toBeGreaterThanOrEqual(6);
    expect(files.filter((f) => readFileSync(f, 'utf8').includes('NO_DEAD_LETTER_TABLE'))).toEqual([]);
  });
});
