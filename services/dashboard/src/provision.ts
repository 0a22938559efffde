import { topics } from '@mds/contracts';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { createKafkaClient, kafkaSettingsFromEnv, provisionTopics, type KafkaSettings } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { READ_MODEL_TOPICS } from './api/kafka/read-models.js';
import type { DeployStepConfig } from './config.js';

/** The topics the dashboard reads (it writes none): created if missing, so it can start before their writers. */
/** The read models' streams, and the clients' (ClientForgotten). */
export const TOPICS = [...READ_MODEL_TOPICS, topics.client];

/**
 * Migrates the dashboard's schema and provisions the topics it reads. Run by the deploy step before new pods
 * start, and again by every replica at start-up: both are idempotent and safe to run concurrently.
 */
export async function provision(o: {
  db: Knex;
  kafka: ReturnType<typeof createKafkaClient>;
  settings: KafkaSettings;
  logger: Logger;
}): Promise<{ migrations: string[] }> {
  const applied = await migrateUp(o.db, SCHEMA, migrations);
  if (applied.length > 0) o.logger.info({ schema: SCHEMA, migrations: applied }, 'applied migrations');
  await provisionTopics(o.kafka, TOPICS, {
    prefix: o.settings.topicPrefix,
    replicationFactor: o.settings.replicationFactor,
    historyRetentionDays: o.settings.historyRetentionDays,
    logger: o.logger,
  });
  return { migrations: applied };
}

/** The one-shot deploy step: provision, then close every connection it opened. */
export async function runDeployStep(
  config: DeployStepConfig,
  logger: Logger,
): Promise<{ migrations: string[] }> {
  const settings = kafkaSettingsFromEnv(config, 'dashboard-deploy-step');
  const db = await openDatabase({
    url: config.DATABASE_URL,
    schema: SCHEMA,
    poolMax: 2,
    applicationName: 'dashboard-deploy-step',
  });
  try {
    return await provision({ db, kafka: createKafkaClient(settings, logger), settings, logger });
  } finally {
    await db.destroy();
  }
}
