import { topics, deliveryTopic } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-foundation';
import { migrations, SCHEMA } from './adapters/db/migrations.js';

/** The topics client-registry owns: it creates them and brings their settings to the declared ones. */
export const TOPICS = [
  topics.account,
  topics.client,
  topics.clientRequest,
  topics.message,
  deliveryTopic('telegram'),
  deliveryTopic('max'),
  topics.botUpdate,
];

/** The registry's schema (accounts, links, person keys, outbox) and the topics it owns. */
export const deployment: ServiceDeployment = {
  service: 'client-registry',
  schema: SCHEMA,
  migrations,
  topics: TOPICS,
};
