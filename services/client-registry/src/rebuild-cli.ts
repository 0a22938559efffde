#!/usr/bin/env node
// mds-registry-rebuild --schema <name> [--json]: rebuilds client-registry's state from its log (the
// account and client streams) into a fresh schema beside the live one, with the service's own folds and
// stores (rebuild.ts). `mds-replay rebuild --service client-registry` runs this bin, so no
// package depends on the service. Environment: KAFKA_*, DATABASE_URL, REGISTRY_ENCRYPTION_KEYS (to open
// the people's keys, docs/personal-data.md).
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '@mds/config';
import { createKafkaClient, kafkaSettingsFromEnv } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { rebuildRegistry } from './rebuild.js';
import { SCHEMA } from './adapters/db/migrations.js';
import { rebuildConfigSchema } from './config.js';

const USAGE =
  'usage: mds-registry-rebuild --schema <name> [--json]   (environment: KAFKA_*, DATABASE_URL, REGISTRY_ENCRYPTION_KEYS)';

export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        schema: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    process.stderr.write(`mds-registry-rebuild: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (!values.schema) {
    process.stderr.write(`mds-registry-rebuild: missing --schema\n${USAGE}\n`);
    return 2;
  }
  let config;
  try {
    config = loadConfig(rebuildConfigSchema, { LOG_LEVEL: 'silent', ...env });
  } catch (error) {
    process.stderr.write(`mds-registry-rebuild: the environment: ${(error as Error).message}\n`);
    return 2;
  }
  const logger = createLogger({ service: 'client-registry-rebuild', level: config.LOG_LEVEL });
  const settings = kafkaSettingsFromEnv(config, 'client-registry-rebuild');
  try {
    const { events } = await rebuildRegistry({
      kafka: createKafkaClient(settings, logger),
      logger,
      topicPrefix: settings.topicPrefix,
      databaseUrl: config.DATABASE_URL,
      schema: values.schema,
      encryptionKeys: config.REGISTRY_ENCRYPTION_KEYS,
      // People's keys are no fact of the log: the live registry's open the sealed numbers.
      personKeysSchema: SCHEMA,
    });
    process.stdout.write(
      values.json
        ? `${JSON.stringify({ events, schema: values.schema })}\n`
        : `rebuilt from ${events} events into schema ${values.schema}\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`mds-registry-rebuild: ${(error as Error).message}\n`);
    return 1;
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
