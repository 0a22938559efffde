import { join } from 'node:path';
import { deployStepContract } from '@mds/service-kit/testing/deploy-step';
import { journalMigrations } from '@mds/sender-kit';
import { SCHEMA } from './app.js';
import { deployStepConfigSchema } from './config.js';
import { deployment, TOPICS } from './provision.js';

deployStepContract({
  serviceDir: join(import.meta.dirname, '..'),
  schema: SCHEMA,
  migrations: journalMigrations,
  topics: TOPICS,
  configSchema: deployStepConfigSchema,
  deployment,
});
