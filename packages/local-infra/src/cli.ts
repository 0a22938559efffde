#!/usr/bin/env node
import { startInfra, stopInfra } from './infra.js';

const USAGE = `usage: local-infra <up|down> [--name dev]
  up     start (or reuse) a Kafka broker and PostgreSQL for the named run and print their addresses
  down   stop what \`up\` started for that run, by process id`;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  const nameIndex = rest.indexOf('--name');
  const name = nameIndex >= 0 ? rest[nameIndex + 1] : 'dev';
  if (!name) throw new Error(USAGE);
  const log = (line: string) => console.log(`[infra] ${line}`);
  if (command === 'up') {
    const started = Date.now();
    const infra = await startInfra({ name, kafkaPort: 9092, postgresPort: 54329, log });
    console.log(`KAFKA_BROKERS=${infra.kafkaBrokers}`);
    console.log(`DATABASE_URL=${infra.databaseUrl}`);
    log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s; stop with: npm run infra:down`);
  } else if (command === 'down') {
    const stopped = await stopInfra(name);
    log(stopped.length ? `stopped ${stopped.join(', ')}` : 'nothing of ours was running');
  } else {
    throw new Error(USAGE);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
