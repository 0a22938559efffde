import { randomUUID } from 'node:crypto';
import type { StreamRecord, TopicSpec } from '@mds/contracts';
import type { Kafka } from 'kafkajs';
import type { Logger } from '@mds/logging';
import { createEventConsumer, type ConsumedEvent } from './consumer.js';
import type { SetAsideRecord } from './dead-letters.js';
import { topicOffsets, topicOffsetsAt } from './partition-offsets.js';
import { topicName } from './topics.js';

/**
 * Reads topics from the beginning (or from the first record at or after `from`, by record timestamp) up
 * to the end they have when called, then stops: the way to rebuild a projection or export history. Each partition's events arrive in order; handleBatch runs one call at a
 * time, with the events of one fetch (several partitions). Uses a throw-away consumer group and commits nothing anyone else reads.
 * Records it cannot decode, and records the handler fails on alone while others pass, are not handled: they
 * come back in `setAside` (with their bytes) for the caller to report.
 */
export async function readToEnd<R extends StreamRecord>(o: {
  kafka: Kafka;
  logger: Logger;
  topics: readonly TopicSpec<R>[];
  topicPrefix?: string;
  handleBatch: (events: ConsumedEvent<R>[]) => Promise<void>;
  maxBatchSize?: number;
  /** Start at the first record whose timestamp is at or after this moment (default: the beginning). */
  from?: Date;
  onProgress?: (done: number, total: number) => void;
}): Promise<{ events: number; setAside: SetAsideRecord[] }> {
  const groupId = `replay-${randomUUID()}`;
  const admin = o.kafka.admin();
  await admin.connect();
  const ends = new Map<string, bigint>();
  let total = 0n;
  try {
    for (const spec of o.topics) {
      const name = topicName(spec, o.topicPrefix);
      const starts = new Map<number, bigint>();
      if (o.from) {
        for (const p of await topicOffsetsAt(admin, name, o.from.getTime()))
          starts.set(p.partition, BigInt(p.offset));
      }
      const partitions: { partition: number; offset: string }[] = [];
      for (const p of await topicOffsets(admin, name)) {
        const end = BigInt(p.high);
        const found = starts.get(p.partition);
        // -1: no record at or after `from` in this partition.
        const start = found === undefined ? BigInt(p.low) : found < 0n ? end : found;
        if (end > start) ends.set(`${name}/${p.partition}`, end);
        total += end > start ? end - start : 0n;
        partitions.push({ partition: p.partition, offset: start.toString() });
      }
      // The throw-away group starts where `from` says: its committed offsets win over fromBeginning.
      if (o.from) await admin.setOffsets({ groupId, topic: name, partitions });
    }
  } finally {
    await admin.disconnect();
  }
  if (ends.size === 0) return { events: 0, setAside: [] };
  const setAside: SetAsideRecord[] = [];
  let seen = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const consumer = createEventConsumer<R>({
    kafka: o.kafka,
    logger: o.logger,
    groupId,
    topics: o.topics,
    topicPrefix: o.topicPrefix,
    fromBeginning: true,
    maxBatchSize: o.maxBatchSize ?? 5_000,
    deadLetters: {
      setAside: (records) => {
        setAside.push(...records);
        return Promise.resolve();
      },
    },
    handleBatch: async (events) => {
      const inRange = events.filter((e) => {
        const end = ends.get(`${e.topic}/${e.partition}`);
        return end !== undefined && BigInt(e.offset) < end;
      });
      if (inRange.length > 0) await o.handleBatch(inRange);
      seen += inRange.length;
      o.onProgress?.(seen, Number(total));
    },
    onHandled: (topic, partition, next) => {
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
  return { events: seen, setAside };
}
