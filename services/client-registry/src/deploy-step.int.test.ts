import { join } from 'node:path';
import { deployStepContract } from '@mds/service-kit/testing/deploy-step';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { deployStepConfigSchema } from './config.js';
import { deployment, TOPICS } from './provision.js';

deployStepContract({
  serviceDir: join(import.meta.dirname, '..'),
  schema: SCHEMA,
  migrations: migrations,
  topics: TOPICS,
  configSchema: deployStepConfigSchema,
  deployment,
});
