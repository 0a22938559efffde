import { deliveryTopic, topics, type MessengerDefinition } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-kit/platform';
import { journalMigrations } from './adapters/journal/journal.js';
import { senderSchemaName } from './config.js';

/**
 * What the sender of one messenger owns: its journal in a schema of its own, and the topics it reads and writes
 * (the messenger's deliveries, messages, bot updates), created if missing (client-registry owns their settings
 * too). The names are the catalogue's (`sender`: telegram-sender, schema telegram_sender), as they always were.
 */
export function senderDeployment(
  definition: MessengerDefinition,
  schema = senderSchemaName(definition),
): ServiceDeployment {
  return {
    service: definition.sender,
    schema,
    migrations: journalMigrations,
    topics: [deliveryTopic(definition.name), topics.message, topics.botUpdate],
  };
}
