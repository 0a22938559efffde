import { topics } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-foundation';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { READ_MODEL_TOPICS } from './api/kafka/read-models.js';

/** The read models' streams, and the clients' (ClientForgotten). */
export const TOPICS = [...READ_MODEL_TOPICS, topics.client];

/** The dashboard's schema (accounts, sessions, read models) and the topics it reads. */
export const deployment: ServiceDeployment = {
  service: 'dashboard',
  schema: SCHEMA,
  migrations,
  topics: TOPICS,
};
