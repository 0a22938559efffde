import { topics, type AccountEvent } from '@mds/contracts';
import { createLogFollower, type EventConsumer, type Kafka, type KafkaMetrics } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { ApiKeyResolver } from '@mds/registry-client';
import { Counter, type Registry } from 'prom-client';

/**
 * Each replica follows the account log (a follower of @mds/kafka: a group of its own, from the end, committing
 * nothing) so that a key's end reaches its memory as soon as the registry commits it, not when a cached answer
 * lapses: ApiKeyRevoked ends the key at once, ApiKeyExpiryScheduled (a rolled key's overlap) at its time. While
 * the follower is between partitions ends may go untold: once it follows again, every good answer kept is
 * asked about again at its next use.
 */
export function keyFollower(o: {
  kafka: Kafka;
  logger: Logger;
  metrics: KafkaMetrics;
  registry: Registry;
  topicPrefix: string | undefined;
  apiKeys: ApiKeyResolver;
  now?: () => number;
}): EventConsumer {
  const now = o.now ?? Date.now;
  const told = new Counter({
    name: 'mds_gateway_api_key_ends_told_total',
    help: 'Ends of API keys the account log told this replica (revoked, or a rolled key whose overlap ends)',
    labelNames: ['kind'],
    registers: [o.registry],
  });
  return createLogFollower<AccountEvent>({
    kafka: o.kafka,
    logger: o.logger,
    metrics: o.metrics,
    topicPrefix: o.topicPrefix,
    name: 'gateway.api-keys',
    topics: [topics.account],
    onFollowing: (following) => {
      if (following) o.apiKeys.lapseAll();
    },
    // An event this build cannot read may have ended a key: every good answer is asked about again.
    onUnreadable: () => o.apiKeys.lapseAll(),
    onEvents: (events) => {
      for (const { event } of events) {
        if (event.$case === 'apiKeyRevoked') {
          // Now, not when the registry's clock says it happened: a clock ahead would delay the end.
          o.apiKeys.keyEnds(event.value.keyId, now());
          told.inc({ kind: 'revoked' });
        } else if (event.$case === 'apiKeyExpiryScheduled' && event.value.expiresAt) {
          o.apiKeys.keyEnds(event.value.keyId, event.value.expiresAt.getTime());
          told.inc({ kind: 'expiry' });
        }
      }
    },
  });
}
