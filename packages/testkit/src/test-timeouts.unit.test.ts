import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '@mds/local-infra';
import { TIMEOUT_FLOOR_MS, WAIT_FLOOR_MS, vitestConfig } from '../../../vitest.shared.js';
import { testFiles, timeoutsIn, workspaceDirs } from './test-support/test-timeouts.js';

// No test passes or fails by the machine's speed: each package's config is the shared one, whose timeouts are
// floors a loaded machine meets, and no config, script or test file asks for less.

const root = repoRoot();
const tested = workspaceDirs(root).filter((dir) => testFiles(dir).length > 0);

describe('test timeouts', () => {
  it.each(tested.map((dir) => [relative(root, dir), dir]))(
    '%s runs its tests under the shared config, at or above the floors',
    async (_, dir) => {
      const file = join(dir, 'vitest.config.ts');
      expect(existsSync(file), `${file} is missing`).toBe(true);
      expect(readFileSync(file, 'utf8')).toMatch(
        /import \{ vitestConfig \} from '(\.\.\/)+vitest\.shared\.js'/,
      );
      const config = (
        (await import(pathToFileURL(file).href)) as { default: { test: Record<string, number> } }
      ).default;
      expect(config.test.testTimeout).toBeGreaterThanOrEqual(TIMEOUT_FLOOR_MS);
      expect(config.test.hookTimeout).toBeGreaterThanOrEqual(TIMEOUT_FLOOR_MS);
      const { scripts = {} } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        scripts?: Record<string, string>;
      };
      expect(Object.values(scripts).filter((s) => /--(test|hook)Timeout/.test(s))).toEqual([]);
    },
  );

  it('no test file gives a test, a suite, a hook or a bounded wait less than its floor', () => {
    const files = tested.flatMap(testFiles);
    expect(files.length).toBeGreaterThan(100);
    const below = files
      .flatMap((f) => timeoutsIn(f, root))
      .filter((t) => t.ms < (t.kind === 'wait' ? WAIT_FLOOR_MS : TIMEOUT_FLOOR_MS));
    expect(below.map((t) => `${t.where}: ${t.ms} ms for a ${t.kind}`)).toEqual([]);
  });

  it('the shared config refuses a timeout below the floor', () => {
    expect(() => vitestConfig({ testTimeout: 5_000 })).toThrow(/below the floor/);
    expect(() => vitestConfig({ hookTimeout: 10_000 })).toThrow(/below the floor/);
    expect(vitestConfig().test).toMatchObject({
      testTimeout: TIMEOUT_FLOOR_MS,
      hookTimeout: 120_000,
      expect: { poll: { timeout: WAIT_FLOOR_MS } },
    });
    expect(vitestConfig({ testTimeout: 300_000 }).test).toMatchObject({ testTimeout: 300_000 });
  });

  it('finds a timeout wherever vitest or a bounded wait takes one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mds-timeouts-'));
    try {
      const file = join(dir, 'x.test.ts');
      writeFileSync(
        file,
        [
          "it('a', async () => {}, 5_000);",
          "it.skipIf(true)('b', { timeout: 2000 }, () => {});",
          "describe('c', { timeout: 1_000 }, () => {",
          '  beforeAll(async () => {}, 9_000);',
          "  it.each([1, 2])('d %i', () => {}, 3_000);",
          "  it('enough', () => {}, 600_000);",
          '});',
          'expect.poll(() => 1, { timeout: 5_000 }).toBe(1);',
          "page.waitForSelector('a', { timeout: 5000 });",
          "producer.send({ topic: 't', timeout: 3_000 });",
          'setTimeout(() => {}, 5_000);',
        ].join('\n'),
      );
      expect(timeoutsIn(file, dir)).toEqual([
        { where: 'x.test.ts:1', kind: 'test', ms: 5_000 },
        { where: 'x.test.ts:2', kind: 'test', ms: 2_000 },
        { where: 'x.test.ts:3', kind: 'test', ms: 1_000 },
        { where: 'x.test.ts:4', kind: 'hook', ms: 9_000 },
        { where: 'x.test.ts:5', kind: 'test', ms: 3_000 },
        { where: 'x.test.ts:6', kind: 'test', ms: 600_000 },
        { where: 'x.test.ts:8', kind: 'wait', ms: 5_000 },
        { where: 'x.test.ts:9', kind: 'wait', ms: 5_000 },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
