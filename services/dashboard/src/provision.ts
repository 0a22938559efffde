import { topics } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-foundation';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { READ_MODEL_TOPICS } from './api/kafka/read-models.js';

/** The read models' streams, the clients' (ClientForgotten) and the API request log. */
export const TOPICS = [...READ_MODEL_TOPICS, topics.client, topics.apiRequests];

/** The dashboard's schema (accounts, sessions, read models) and the topics it reads. */
export const deployment: ServiceDeployment = {
  service: 'dashboard',
  schema: SCHEMA,
  migrations,
  topics: TOPICS,
};
