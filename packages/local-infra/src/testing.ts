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
  const { default: pg } = await import('pg');
  const name = uniqueName(prefix).toLowerCase();
  const server = testInfra().databaseUrl;
  const client = new pg.Client({ connectionString: server });
  await client.connect();
  try {
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}
