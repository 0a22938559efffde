import { randomUUID } from 'node:crypto';
import type { StreamRecord, TopicSpec } from '@mds/contracts';
import type { Kafka } from 'kafkajs';
import type { Logger } from '@mds/logging';
import { createEventConsumer, type ConsumedEvent } from './consumer.js';
import { topicName } from './topics.js';

/**
 * Reads topics from the beginning up to the end they have when called, then stops: the way to rebuild a
 * projection or export history. Each partition's batches arrive in order; handleBatch runs one at a time
 * per partition. Uses a throw-away consumer group and commits nothing anyone else reads.
 */
export async function readToEnd<R extends StreamRecord>(o: {
  kafka: Kafka;
  logger: Logger;
  topics: readonly TopicSpec<R>[];
  topicPrefix?: string;
  handleBatch: (events: ConsumedEvent<R>[]) => Promise<void>;
  maxBatchSize?: number;
  onProgress?: (done: number, total: number) => void;
}): Promise<{ events: number }> {
  const admin = o.kafka.admin();
  await admin.connect();
  const ends = new Map<string, bigint>();
  let total = 0n;
  try {
    for (const spec of o.topics) {
      const name = topicName(spec, o.topicPrefix);
      for (const p of await admin.fetchTopicOffsets(name)) {
        const end = BigInt(p.high);
        const start = BigInt(p.low);
        if (end > start) ends.set(`${name}/${p.partition}`, end);
        total += end - start;
      }
    }
  } finally {
    await admin.disconnect();
  }
  if (ends.size === 0) return { events: 0 };
  let seen = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const consumer = createEventConsumer<R>({
    kafka: o.kafka,
    logger: o.logger,
    groupId: `replay-${randomUUID()}`,
    topics: o.topics,
    topicPrefix: o.topicPrefix,
    fromBeginning: true,
    maxBatchSize: o.maxBatchSize ?? 2_000,
    partitionsConsumedConcurrently: 4,
    handleBatch: async (events, context) => {
      const end = ends.get(`${context.topic}/${context.partition}`);
      const inRange = end === undefined ? [] : events.filter((e) => BigInt(e.offset) < end);
      if (inRange.length > 0) await o.handleBatch(inRange);
      seen += inRange.length;
      o.onProgress?.(seen, Number(total));
    },
    onCommitted: (topic, partition, next) => {
      const key = `${topic}/${partition}`;
      const end = ends.get(key);
      if (end !== undefined && next >= end) {
        ends.delete(key);
        if (ends.size === 0) finish();
      }
    },
  });
  await consumer.start();
  await finished;
  await consumer.stop();
  return { events: seen };
}
