import { topics } from '@mds/contracts';
import { migrateUp, openDatabase } from '@mds/db';
import { createKafkaClient, kafkaSettingsFromEnv, provisionTopics } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { journalMigrations } from '@mds/sender-kit';
import { SCHEMA } from './app.js';
import type { DeployStepConfig } from './config.js';

/** The topics telegram-sender reads and writes: it creates them if missing (client-registry owns their settings too). */
export const TOPICS = [topics.deliveryTelegram, topics.message, topics.botUpdate];

/**
 * The one-shot deploy step: migrates the sender's journal (schema telegram_sender) and provisions its
 * topics, then closes every connection it opened. Every replica does the same again at start-up (startSender):
 * both are idempotent and safe to run concurrently (advisory lock, create-if-missing).
 */
export async function runDeployStep(
  config: DeployStepConfig,
  logger: Logger,
): Promise<{ migrations: string[] }> {
  const settings = kafkaSettingsFromEnv(config, 'telegram-sender-deploy-step');
  const db = await openDatabase({
    url: config.DATABASE_URL,
    schema: SCHEMA,
    poolMax: 2,
    applicationName: 'telegram-sender-deploy-step',
  });
  try {
    const applied = await migrateUp(db, SCHEMA, journalMigrations);
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
