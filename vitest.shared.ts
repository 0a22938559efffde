import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { defineConfig, type ViteUserConfig } from 'vitest/config';
import type { Reporter, TestModule, Vitest } from 'vitest/node';

const conditions = ['@mds/source', 'node'];

/**
 * The least time a test or a hook gets, in every package: what a loaded 2-core machine (several engineers, a
 * full `npm test`) meets for real work in a test (spawning a process, compiling, rendering a chart, importing
 * every service's config schema, a browser), with room to spare. A test that needs more says so; none gets
 * less, so no test passes or fails by the machine's speed. `packages/testkit/src/test-timeouts.unit.test.ts`
 * holds every config and test file to it.
 */
export const TIMEOUT_FLOOR_MS = 60_000;
/**
 * The least a bounded wait inside a test gets (`expect.poll`, `vi.waitFor`, a browser's `waitForSelector`): the
 * default of `expect.poll`, whose own is 1 s, which a busy browser misses.
 */
export const WAIT_FLOOR_MS = 30_000;
/** Hooks start what tests share (a stack, a broker, a browser): twice the floor unless a config says more. */
const DEFAULT_HOOK_TIMEOUT_MS = 120_000;

/** Where each package's run writes how long each of its test files took (`npm test` prints the slowest). */
export const FILE_TIMINGS = 'test-artifacts/vitest-files.json';

export interface FileTiming {
  /** Relative to the package. */
  file: string;
  state: string;
  /** Everything the file cost: its worker's set-up, importing it, and its hooks and tests. */
  ms: number;
  /** Of which importing the file and what it imports. */
  importMs: number;
}

/**
 * Writes each test file's whole cost to FILE_TIMINGS. vitest's JSON report times a file from its first test
 * to its last, which leaves out the hooks (where an end-to-end file starts its stack) and the import.
 */
class FileTimings implements Reporter {
  private root = process.cwd();
  private startedAt = Date.now();

  onInit(vitest: Vitest): void {
    this.root = vitest.config.root;
    this.startedAt = Date.now();
  }

  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const files: FileTiming[] = testModules.map((module) => {
      const d = module.diagnostic();
      const ms =
        d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration + d.duration;
      return {
        file: relative(this.root, module.moduleId),
        state: module.state(),
        ms: Math.round(ms),
        importMs: Math.round(d.collectDuration),
      };
    });
    mkdirSync(join(this.root, 'test-artifacts'), { recursive: true });
    const run = { startedAt: this.startedAt, endedAt: Date.now(), files };
    writeFileSync(join(this.root, FILE_TIMINGS), JSON.stringify(run, null, 2));
  }
}

/**
 * The vitest config every package uses. Workspace packages resolve to their TypeScript source (the
 * `@mds/source` export condition), so tests never run against a stale build. `infra: true` adds the
 * global setup that provides one real Kafka broker and one PostgreSQL for the run. Timeouts may be raised
 * above the floors, never lowered below them.
 */
export function vitestConfig(
  options: { infra?: boolean; testTimeout?: number; hookTimeout?: number } = {},
): ViteUserConfig {
  const testTimeout = options.testTimeout ?? TIMEOUT_FLOOR_MS;
  const hookTimeout = options.hookTimeout ?? DEFAULT_HOOK_TIMEOUT_MS;
  if (Math.min(testTimeout, hookTimeout) < TIMEOUT_FLOOR_MS) {
    throw new Error(
      `vitestConfig: a test timeout of ${testTimeout} ms or a hook timeout of ${hookTimeout} ms is below the ` +
        `floor a loaded machine meets (${TIMEOUT_FLOOR_MS} ms)`,
    );
  }
  return defineConfig({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: ['@mds/source'] } },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      testTimeout,
      hookTimeout,
      // Stopping the broker and database the global setup started takes a few seconds.
      teardownTimeout: 60_000,
      expect: { poll: { timeout: WAIT_FLOOR_MS } },
      globalSetup: options.infra ? ['@mds/local-infra/vitest-setup'] : [],
      // Integration tests share one broker: running files one at a time keeps a 2-core machine honest.
      fileParallelism: !options.infra,
      // The JSON report lets `npm test` print one total for the whole repository; the file timings, the
      // slowest files.
      reporters: [
        'default',
        ['json', { outputFile: 'test-artifacts/vitest-results.json' }],
        new FileTimings(),
      ],
    },
  });
}
