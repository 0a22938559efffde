import { topics } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-kit/platform';
import { migrations, SCHEMA } from './adapters/db/migrations.js';

/** The topics webhook-dispatcher reads and writes: it creates them if missing (client-registry owns their settings too). */
export const TOPICS = [topics.message, topics.clientRequest, topics.webhook, topics.client, topics.account];

/** The dispatcher's schema (webhook_dispatcher: deliveries, attempts, outbox) and its topics. */
export const deployment: ServiceDeployment = {
  service: 'webhook-dispatcher',
  schema: SCHEMA,
  migrations,
  topics: TOPICS,
};
