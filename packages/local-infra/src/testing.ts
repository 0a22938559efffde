import { randomUUID } from 'node:crypto';

/** A name no other test uses: for topics, consumer groups, schemas. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

/** The broker and database of this test run, started once by the global setup (or given by the environment). */
export function testInfra(): { kafkaBrokers: string[]; databaseUrl: string } {
  const brokers = process.env.KAFKA_BROKERS;
  const databaseUrl = process.env.DATABASE_URL;
  if (!brokers || !databaseUrl) {
    throw new Error(
      'KAFKA_BROKERS and DATABASE_URL are not set: run the tests through `npm test`, or add ' +
        "'@mds/local-infra/vitest-setup' to the package's vitest globalSetup.",
    );
  }
  return { kafkaBrokers: brokers.split(','), databaseUrl };
}

/** A fresh, empty database on the run's PostgreSQL server, for a suite whose services use fixed schema names. */
export async function createTestDatabase(prefix: string): Promise<string> {
  const { createDatabase } = await import('./postgres.js');
  return createDatabase(testInfra().databaseUrl, uniqueName(prefix).toLowerCase());
}

/** Polls until `probe` gives something other than undefined or false (bounded), and returns it. */
export async function eventually<T>(
  what: string,
  probe: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
