import { randomUUID } from 'node:crypto';
import type { Complete, StreamRecord, TopicSpec } from '@mds/contracts';
import { createLogger } from '@mds/logging';
import { createKafkaClient } from './client.js';
import { createEventConsumer } from './consumer.js';
import { NO_DEAD_LETTER_TABLE } from './dead-letters.js';

/** For tests: every event of a topic, from the beginning, in a list that fills as they arrive. */
export async function collectEvents<R extends StreamRecord>(o: {
  brokers: string[];
  topic: TopicSpec<R>;
  topicPrefix: string;
}): Promise<{ events: Complete<R>[]; stop: () => Promise<void> }> {
  const logger = createLogger({ service: 'collector', level: 'silent' });
  const events: Complete<R>[] = [];
  const consumer = createEventConsumer<R>({
    kafka: createKafkaClient({ brokers: o.brokers, clientId: 'collector' }, logger),
    logger,
    groupId: `collector-${randomUUID()}`,
    topics: [o.topic],
    topicPrefix: o.topicPrefix,
    deadLetters: NO_DEAD_LETTER_TABLE,
    handleBatch: (batch) => {
      events.push(...batch.map((e) => e.record));
      return Promise.resolve();
    },
  });
  await consumer.start();
  return { events, stop: () => consumer.stop() };
}
