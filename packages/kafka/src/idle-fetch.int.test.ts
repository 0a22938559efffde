import { Registry } from 'prom-client';
import { afterEach, expect, it } from 'vitest';
import type { MessageEvent } from '@mds/contracts';
import { uniqueName } from '@mds/local-infra/testing';
import {
  createEventConsumer,
  createEventPublisher,
  kafkaMetrics,
  NO_DEAD_LETTER_TABLE,
  provisionTopics,
  topicName,
  type ConsumedEvent,
} from './index.js';
import { logger, messageSent, messageTopic, prefix, testKafka, waitFor } from '../test/support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A fetch the broker holds far longer than this test may take: only a stop that cuts it short ends in time. */
const WAIT_MS = 300_000;

it(
  'an idle fetch waits at the broker, answers as soon as a record comes, and a stop cuts it short',
  { timeout: 120_000 },
  async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 3 });
    const registry = new Registry();
    const metrics = kafkaMetrics(registry);
    const fetches = async () => (await metrics.fetches.get()).values.reduce((sum, v) => sum + v.value, 0);
    const received: ConsumedEvent<MessageEvent>[] = [];
    const groupId = uniqueName('g');
    const consumer = createEventConsumer<MessageEvent>({
      kafka: testKafka(),
      logger,
      metrics,
      groupId,
      deadLetters: NO_DEAD_LETTER_TABLE,
      topics: [messageTopic],
      topicPrefix: p,
      maxWaitTimeMs: WAIT_MS,
      // kafkajs heartbeats between fetches only: the group must keep a member silent for a whole wait.
      sessionTimeoutMs: WAIT_MS + 60_000,
      handleBatch: (events) => {
        received.push(...events);
        return Promise.resolve();
      },
    });
    await consumer.start();
    const publisher = createEventPublisher({ kafka: testKafka(), logger, topicPrefix: p });
    await publisher.connect();
    cleanups.push(() => publisher.disconnect());

    // The first fetch is in flight and the broker holds it: nothing there yet.
    await waitFor('a first fetch', () => received.length === 0);
    const before = await fetches();
    expect(before).toBeGreaterThan(0);
    await publisher.publish([{ topic: messageTopic, key: 'k', record: messageSent('k') }]);
    await waitFor('the record, long before the wait ends', () => received.length === 1);
    // Answered by the record, then the next fetch waits again.
    await waitFor('the next fetch', () => true);

    await consumer.stop();
    // The member left the group (a member that vanished would stay in it until its session timed out).
    const admin = testKafka().admin();
    await admin.connect();
    try {
      const { groups } = await admin.describeGroups([groupId]);
      expect(groups[0]!.members).toEqual([]);
      const offsets = await admin.fetchOffsets({ groupId, topics: [topicName(messageTopic, p)] });
      expect(
        offsets[0]!.partitions.map((o) => Number(o.offset)).reduce((a, b) => a + Math.max(b, 0), 0),
      ).toBe(1);
    } finally {
      await admin.disconnect();
    }
  },
);
