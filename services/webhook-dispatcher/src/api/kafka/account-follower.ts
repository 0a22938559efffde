import { randomUUID } from 'node:crypto';
import { topics, type AccountEvent } from '@mds/contracts';
import { createEventConsumer, type EventConsumer, type Kafka, type KafkaMetrics } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { EndpointView } from '../../application/endpoint-view.js';

/**
 * Each replica follows the account log to keep its endpoint view fresh: a group of its own, from the end of the
 * log (the view starts empty and reads what it needs), committing nothing. Any account event of a company
 * (an endpoint added, changed, rotated, disabled, enabled or removed, or anything else) has its endpoints read
 * again when next needed.
 */
export function accountFollower(o: {
  kafka: Kafka;
  logger: Logger;
  metrics: KafkaMetrics;
  topicPrefix: string | undefined;
  view: EndpointView;
}): EventConsumer {
  return createEventConsumer<AccountEvent>({
    kafka: o.kafka,
    logger: o.logger,
    metrics: o.metrics,
    groupId: `${o.topicPrefix ?? ''}webhook-dispatcher.endpoints.${randomUUID()}`,
    topicPrefix: o.topicPrefix,
    topics: [topics.account],
    fromBeginning: false,
    commitOffsets: false,
    // Until it owns its partitions (and a moment after), changes may go unseen: the view trusts what it reads
    // meanwhile for a moment only.
    onAssignment: (partitions) => o.view.following([...partitions.values()].some((p) => p.length > 0)),
    // An event this build cannot read may have changed anything: every list is read again.
    deadLetters: { setAside: () => Promise.resolve(o.view.clear()) },
    handleBatch: (events) => {
      for (const e of events) o.view.changed(e.record.metadata.companyId);
      return Promise.resolve();
    },
  });
}
