import { join } from 'node:path';
import { describe } from 'vitest';
import { BUILT_IN_MESSENGERS } from '@mds/contracts';
import { deployStepContract } from '@mds/service-kit/testing/deploy-step';
import { journalMigrations } from './adapters/journal/journal.js';
import { deployStepConfigSchema, senderSchemaName } from './config.js';
import { senderDeployment } from './deployment.js';

// One deploy step for every messenger's sender (MESSENGER): each keeps the schema and topics it always had.
for (const definition of BUILT_IN_MESSENGERS) {
  describe(`MESSENGER=${definition.name}`, () => {
    const deployment = senderDeployment(definition);
    deployStepContract(join(import.meta.dirname, '..'), deployStepConfigSchema, deployment, {
      schema: senderSchemaName(definition),
      migrations: journalMigrations,
      topics: deployment.topics,
      env: { MESSENGER: definition.name },
    });
  });
}
