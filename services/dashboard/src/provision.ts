import { topics, type TopicSpec } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-kit/platform';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { readModelTopics } from './api/kafka/read-models.js';

/** The read models' streams, the clients' (ClientForgotten) and the API request log. */
export function readTopics(): TopicSpec[] {
  return [...readModelTopics(), topics.client, topics.apiRequests] as TopicSpec[];
}

/** The dashboard's schema (accounts, sessions, read models) and the topics it reads. */
export const deployment: ServiceDeployment = {
  service: 'dashboard',
  schema: SCHEMA,
  migrations,
  get topics() {
    return readTopics();
  },
};
