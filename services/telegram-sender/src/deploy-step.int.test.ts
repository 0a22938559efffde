import { join } from 'node:path';
import { deployStepContract } from '@mds/service-foundation/testing/deploy-step';
import { journalMigrations } from '@mds/sender';
import { SCHEMA } from './app.js';
import { deployStepConfigSchema } from './config.js';
import { deployment, TOPICS } from './provision.js';

const expected = { schema: SCHEMA, migrations: journalMigrations, topics: TOPICS };
deployStepContract(join(import.meta.dirname, '..'), deployStepConfigSchema, deployment, expected);
