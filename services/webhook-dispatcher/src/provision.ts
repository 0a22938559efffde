import { topics } from '@mds/contracts';
import { migrateUp, openDatabase } from '@mds/db';
import { createKafkaClient, kafkaSettingsFromEnv, provisionTopics } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import type { DeployStepConfig } from './config.js';

/** The topics webhook-dispatcher reads and writes: it creates them if missing (client-registry owns their settings too). */
export const TOPICS = [topics.message, topics.clientRequest, topics.webhook, topics.client];

/**
 * The one-shot deploy step: migrates the dispatcher's schema (webhook_dispatcher: deliveries, attempts, outbox)
 * and provisions its topics, then closes every connection it opened. Every replica does the same again at
 * start-up (startDispatcher): both are idempotent and safe to run concurrently (advisory lock, create-if-missing).
 */
export async function runDeployStep(
  config: DeployStepConfig,
  logger: Logger,
): Promise<{ migrations: string[] }> {
  const settings = kafkaSettingsFromEnv(config, 'webhook-dispatcher-deploy-step');
  const db = await openDatabase({
    url: config.DATABASE_URL,
    schema: SCHEMA,
    poolMax: 2,
    applicationName: 'webhook-dispatcher-deploy-step',
  });
  try {
    const applied = await migrateUp(db, SCHEMA, migrations);
    if (applied.length > 0) logger.info({ schema: SCHEMA, migrations: applied }, 'applied migrations');
    await provisionTopics(createKafkaClient(settings, logger), TOPICS, {
      prefix: settings.topicPrefix,
      replicationFactor: settings.replicationFactor,
      historyRetentionDays: settings.historyRetentionDays,
      logger,
    });
    return { migrations: applied };
  } finally {
    await db.destroy();
  }
}
