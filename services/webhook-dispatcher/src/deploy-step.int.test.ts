import { join } from 'node:path';
import { deployStepContract } from '@mds/service-kit/testing/deploy-step';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { deployStepConfigSchema } from './config.js';
import { deployment, TOPICS } from './provision.js';

const expected = { schema: SCHEMA, migrations, topics: TOPICS };
deployStepContract(join(import.meta.dirname, '..'), deployStepConfigSchema, deployment, expected);
