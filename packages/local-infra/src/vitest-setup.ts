import { startInfra } from './infra.js';

/**
 * Vitest global setup: one broker and one database for the whole run. `npm test` starts them once for
 * every package and passes KAFKA_BROKERS / DATABASE_URL down; a package tested on its own starts its own
 * here and stops it after.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.KAFKA_BROKERS && process.env.DATABASE_URL) return undefined;
  const infra = await startInfra({
    name: `test-${process.pid}`,
    ephemeral: true,
    log: (line) => console.log(`[infra] ${line}`),
  });
  process.env.KAFKA_BROKERS = infra.kafkaBrokers;
  process.env.DATABASE_URL = infra.databaseUrl;
  console.log(
    `[infra] Kafka ${infra.kafkaVersion ?? '(external)'} at ${infra.kafkaBrokers}; PostgreSQL ${infra.postgresVersion ?? '(external)'}`,
  );
  return () => infra.stop();
}
