import { topics, type DeliveryEvent, type TopicSpec } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-foundation';
import { journalMigrations } from './adapters/journal/journal.js';

/**
 * What a sender owns: its journal in a schema of its own, and the topics it reads and writes (its messenger's
 * deliveries, messages, bot updates), created if missing (client-registry owns their settings too).
 */
export function senderDeployment(o: {
  service: string;
  schema: string;
  deliveryTopic: TopicSpec<DeliveryEvent>;
}): ServiceDeployment {
  return {
    service: o.service,
    schema: o.schema,
    migrations: journalMigrations,
    topics: [o.deliveryTopic, topics.message, topics.botUpdate],
  };
}
