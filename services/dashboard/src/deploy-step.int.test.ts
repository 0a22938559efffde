import { join } from 'node:path';
import { deployStepContract } from '@mds/service-kit/testing/deploy-step';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { deployStepConfigSchema } from './config.js';
import { deployment, readTopics } from './provision.js';

const expected = { schema: SCHEMA, migrations, topics: readTopics() };
deployStepContract(join(import.meta.dirname, '..'), deployStepConfigSchema, deployment, expected);
