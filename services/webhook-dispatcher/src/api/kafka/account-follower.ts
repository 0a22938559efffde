import { topics, type AccountEvent } from '@mds/contracts';
import { createLogFollower, type EventConsumer, type Kafka, type KafkaMetrics } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { EndpointView } from '../../application/endpoint-view.js';

/**
 * Each replica follows the account log to keep its endpoint view fresh (a follower of @mds/kafka: a group of
 * its own, from the end of the log, committing nothing; the view starts empty and reads what it needs). Any
 * account event of a company (an endpoint added, changed, rotated, disabled, enabled or removed, or anything
 * else) has its endpoints read again when next needed.
 */
export function accountFollower(o: {
  kafka: Kafka;
  logger: Logger;
  metrics: KafkaMetrics;
  topicPrefix: string | undefined;
  view: EndpointView;
}): EventConsumer {
  return createLogFollower<AccountEvent>({
    kafka: o.kafka,
    logger: o.logger,
    metrics: o.metrics,
    topicPrefix: o.topicPrefix,
    name: 'webhook-dispatcher.endpoints',
    topics: [topics.account],
    // Until it owns its partitions (and a moment after), changes may go unseen: the view trusts what it reads
    // meanwhile for a moment only.
    onFollowing: (following) => o.view.following(following),
    // An event this build cannot read may have changed anything: every list is read again.
    onUnreadable: () => o.view.clear(),
    onEvents: (events) => {
      for (const e of events) o.view.changed(e.metadata.companyId);
    },
  });
}
