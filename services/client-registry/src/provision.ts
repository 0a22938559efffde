import { deliveryTopic, messengers, topics, type TopicSpec } from '@mds/contracts';
import type { ServiceDeployment } from '@mds/service-kit/platform';
import { migrations, SCHEMA } from './adapters/db/migrations.js';

/**
 * The topics client-registry owns: it creates them and brings their settings to the declared ones. A delivery
 * topic per messenger of the catalogue, read when asked (after any plugin registered its messenger).
 */
export function ownedTopics(): TopicSpec[] {
  return [
    topics.account,
    topics.client,
    topics.clientRequest,
    topics.message,
    ...messengers().map((m) => deliveryTopic(m.name)),
    topics.botUpdate,
  ] as TopicSpec[];
}

/** The registry's schema (accounts, links, person keys, outbox) and the topics it owns. */
export const deployment: ServiceDeployment = {
  service: 'client-registry',
  schema: SCHEMA,
  migrations,
  get topics() {
    return ownedTopics();
  },
};
