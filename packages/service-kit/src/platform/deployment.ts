// What a service owns (its database schema with migrations, the topics it creates) declared once, and the
// mechanics that bring both up to date: at every replica's start-up and in the one-shot deploy step.
import type { z } from '@mds/config';
import type { TopicSpec } from '@mds/contracts';
import { deadLettersMigration, migrateUp, openDatabase, type Knex, type Migration } from '@mds/db';
import {
  createKafkaClient,
  kafkaSettingsFromEnv,
  provisionTopics,
  type ExistingTopics,
  type Kafka,
  type KafkaSettings,
} from '@mds/kafka';
import { createLogger, type Logger } from '@mds/logging';
import { loadConfigOrExit, loadMessengerPlugins } from '../index.js';

/** What a service owns in the database and on the broker. */
export interface ServiceDeployment {
  /** The service's name: the deploy step's logger, Kafka client and connections are `<name>-deploy-step`. */
  service: string;
  schema: string;
  migrations: readonly Migration[];
  /** The topics it creates if missing and brings to their declared settings. */
  topics: readonly TopicSpec[];
}

/** The environment the deploy step reads: the log level, Kafka's settings and the database. */
export type DeployStepConfig = Parameters<typeof kafkaSettingsFromEnv>[0] & {
  LOG_LEVEL: string;
  DATABASE_URL: string;
};

/**
 * Migrates the service's schema and provisions its topics. Run by the deploy step before new pods start, and
 * again by every replica at start-up: both are idempotent and safe to run concurrently (advisory lock,
 * create-if-missing), so an old and a new version side by side never race. Only the deploy step configures
 * existing topics (`existing: 'configure'`, its Kafka user may AlterConfigs); a replica leaves them as they
 * are, so the running service needs no right on the broker beyond using its topics.
 */
export async function provision(
  deployment: ServiceDeployment,
  o: { db: Knex; kafka: Kafka; settings: KafkaSettings; logger: Logger; existing: ExistingTopics },
): Promise<{ migrations: string[] }> {
  const applied = await migrateUp(o.db, deployment.schema, withDeadLetters(deployment.migrations));
  if (applied.length > 0)
    o.logger.info({ schema: deployment.schema, migrations: applied }, 'applied migrations');
  await provisionTopics(o.kafka, deployment.topics, {
    prefix: o.settings.topicPrefix,
    replicationFactor: o.settings.replicationFactor,
    historyRetentionDays: o.settings.historyRetentionDays,
    logger: o.logger,
    existing: o.existing,
  });
  return { migrations: applied };
}

/**
 * Every service's consumer groups set aside what they cannot handle in its `dead_letters` table: the table
 * is part of every schema, whether or not the service lists its migration.
 */
export function withDeadLetters(migrations: readonly Migration[]): Migration[] {
  return migrations.some((m) => m.name === deadLettersMigration.name)
    ? [...migrations]
    : [deadLettersMigration, ...migrations];
}

/** The one-shot deploy step: provision, then close every connection it opened. */
export async function runDeployStep(
  deployment: ServiceDeployment,
  config: DeployStepConfig,
  logger: Logger,
): Promise<{ migrations: string[] }> {
  const name = `${deployment.service}-deploy-step`;
  const settings = kafkaSettingsFromEnv(config, name);
  const db = await openDatabase({
    url: config.DATABASE_URL,
    schema: deployment.schema,
    poolMax: 2,
    applicationName: name,
  });
  try {
    return await provision(deployment, {
      db,
      kafka: createKafkaClient(settings, logger),
      settings,
      logger,
      existing: 'configure',
    });
  } finally {
    await db.destroy();
  }
}

/**
 * The deploy step as a process (each service's dist/deploy-step.js, the Helm chart's pre-install/pre-upgrade
 * Job): reads its configuration, migrates and provisions, then exits 0 when done and 1 when it failed, with
 * the reason logged.
 */
export async function deployStepProcess<S extends z.ZodObject>(
  deployment: ServiceDeployment,
  configSchema: S,
): Promise<never> {
  await loadMessengerPlugins(`${deployment.service} deploy step`);
  const config = loadConfigOrExit(`${deployment.service} deploy step`, configSchema) as DeployStepConfig;
  const logger = createLogger({ service: `${deployment.service}-deploy-step`, level: config.LOG_LEVEL });
  try {
    const { migrations } = await runDeployStep(deployment, config, logger);
    logger.info({ migrations }, 'deploy step done');
    logger.flush();
    process.exit(0);
  } catch (error) {
    logger.fatal({ err: error }, 'deploy step failed');
    logger.flush();
    process.exit(1);
  }
}
