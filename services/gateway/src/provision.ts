import { topics } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-kit/platform';
import { migrations, SCHEMA } from './adapters/db/migrations.js';

/**
 * The topics the gateway writes to and reads: it creates them if missing (client-registry owns the settings of
 * those it shares too; the API request log's are the gateway's).
 */
export const TOPICS = [
  topics.message,
  topics.clientRequest,
  topics.client,
  topics.account,
  topics.apiRequests,
];

/** The gateway's schema (idempotency keys, rate-limit buckets, the read model of events) and its topics. */
export const deployment: ServiceDeployment = {
  service: 'gateway',
  schema: SCHEMA,
  migrations,
  topics: TOPICS,
};
