import { randomUUID } from 'node:crypto';
import {
  topics,
  type AccountEvent,
  type BotUpdateEvent,
  type ClientEvent,
  type ClientRequestEvent,
} from '@mds/contracts';
import {
  createEventConsumer,
  type ConsumedEvent,
  type EventConsumer,
  type Kafka,
  type KafkaMetrics,
} from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { openRecords, type PersonKeyCache } from '@mds/personal-data';
import type { RoutingView } from '../../application/routing-view.js';

export function isBotUpdate(
  event: ConsumedEvent<BotUpdateEvent | ClientRequestEvent>,
): event is ConsumedEvent<BotUpdateEvent> {
  return event.spec.name === topics.botUpdate.name;
}

/**
 * Each replica follows account and client events to keep its routing view fresh: a group of its own, from
 * the end of the log (the view starts empty and reads what it needs), committing nothing.
 */
export function routingViewFollower(o: {
  kafka: Kafka;
  logger: Logger;
  metrics: KafkaMetrics;
  topicPrefix: string | undefined;
  view: RoutingView;
  keys: PersonKeyCache;
}): EventConsumer {
  return createEventConsumer<AccountEvent | ClientEvent>({
    kafka: o.kafka,
    logger: o.logger,
    metrics: o.metrics,
    groupId: `${o.topicPrefix ?? ''}client-registry.routing-view.${randomUUID()}`,
    topicPrefix: o.topicPrefix,
    topics: [topics.account, topics.client] as never,
    fromBeginning: false,
    commitOffsets: false,
    // An event this build cannot read or apply may have changed anything: the view is read again from the
    // state. An observer keeps no table: what it sets aside is logged and counted.
    deadLetters: { setAside: () => Promise.resolve(o.view.clear()) },
    handleBatch: async (events) => {
      for (const e of events) {
        const event = e.record.event;
        if (event.$case === 'clientForgotten')
          o.keys.forgetSubject(e.record.metadata.companyId, event.value.subjectId);
      }
      // Link events name their number sealed: opened to know which entry to drop (an erased one names none).
      for (const record of await openRecords(
        o.keys,
        events.map((e) => e.record),
      ))
        o.view.forget(record);
    },
  });
}
