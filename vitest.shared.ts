import { defineConfig, type ViteUserConfig } from 'vitest/config';

const conditions = ['@mds/source', 'node'];

/**
 * The vitest config every package uses. Workspace packages resolve to their TypeScript source (the
 * `@mds/source` export condition), so tests never run against a stale build. `infra: true` adds the
 * global setup that provides one real Kafka broker and one PostgreSQL for the run.
 */
export function vitestConfig(options: { infra?: boolean; testTimeout?: number } = {}): ViteUserConfig {
  return defineConfig({
    resolve: { conditions },
    ssr: { resolve: { conditions, externalConditions: ['@mds/source'] } },
    test: {
      include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
      testTimeout: options.testTimeout ?? (options.infra ? 60_000 : 5_000),
      hookTimeout: options.infra ? 120_000 : 10_000,
      // Stopping the broker and database the global setup started takes a few seconds.
      teardownTimeout: 60_000,
      globalSetup: options.infra ? ['@mds/local-infra/vitest-setup'] : [],
      // Integration tests share one broker: running files one at a time keeps a 2-core machine honest.
      fileParallelism: !options.infra,
      // The JSON report lets `npm test` print one total for the whole repository.
      reporters: ['default', ['json', { outputFile: 'test-artifacts/vitest-results.json' }]],
    },
  });
}
