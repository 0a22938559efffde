import { describe, expect, it } from 'vitest';
import { topics } from '@mds/contracts';
import { createEventPublisher, provisionTopics, readToEnd, topicName } from './index.js';
import { logger, messageSent, prefix, testKafka } from '../test/support.js';

describe('readToEnd', () => {
  it('reads every topic from the beginning to where it ends now, then stops', async () => {
    const p = prefix();
    const kafka = testKafka();
    await provisionTopics(kafka, [topics.message, topics.botUpdate], { prefix: p, partitions: 3 });
    const publisher = createEventPublisher({ kafka, logger, topicPrefix: p });
    await publisher.connect();
    const records = Array.from({ length: 30 }, (_, i) => messageSent(`m${i % 7}`, i));
    await publisher.publish(
      records.map((record) => ({ topic: topics.message, key: record.metadata.streamId, record })),
    );
    const seen: string[] = [];
    const progress: number[] = [];
    const result = await readToEnd({
      kafka,
      logger,
      topics: [topics.message, topics.botUpdate] as never,
      topicPrefix: p,
      handleBatch: async (events) => {
        seen.push(...events.map((e) => e.record.metadata.eventId));
      },
      onProgress: (done) => progress.push(done),
    });
    // Written after the read began: not part of it.
    await publisher.publish([{ topic: topics.message, key: 'late', record: messageSent('late') }]);
    await publisher.disconnect();
    expect(result.events).toBe(30);
    expect(seen.sort()).toEqual(records.map((r) => r.metadata.eventId).sort());
    expect(progress.at(-1)).toBe(30);
    expect(topicName(topics.message, p)).toContain(p);
  });

  it('starts from the first record at or after a given time', async () => {
    const p = prefix();
    const kafka = testKafka();
    await provisionTopics(kafka, [topics.message], { prefix: p, partitions: 3 });
    const publisher = createEventPublisher({ kafka, logger, topicPrefix: p });
    await publisher.connect();
    const publish = (records: ReturnType<typeof messageSent>[]) =>
      publisher.publish(
        records.map((record) => ({ topic: topics.message, key: record.metadata.streamId, record })),
      );
    await publish(Array.from({ length: 10 }, (_, i) => messageSent(`old${i}`, i)));
    await new Promise((r) => setTimeout(r, 20));
    const from = new Date();
    await new Promise((r) => setTimeout(r, 20));
    const recent = Array.from({ length: 5 }, (_, i) => messageSent(`new${i}`, i));
    await publish(recent);
    await publisher.disconnect();
    const seen: string[] = [];
    const progress: [number, number][] = [];
    const result = await readToEnd({
      kafka,
      logger,
      topics: [topics.message],
      topicPrefix: p,
      from,
      handleBatch: async (events) => {
        seen.push(...events.map((e) => e.record.metadata.eventId));
      },
      onProgress: (done, total) => progress.push([done, total]),
    });
    expect(result.events).toBe(5);
    expect(seen.sort()).toEqual(recent.map((r) => r.metadata.eventId).sort());
    expect(progress.at(-1)).toEqual([5, 5]);
  });

  it('returns at once when there is nothing to read', async () => {
    const p = prefix();
    const kafka = testKafka();
    await provisionTopics(kafka, [topics.message], { prefix: p, partitions: 1 });
    expect(
      await readToEnd({
        kafka,
        logger,
        topics: [topics.message],
        topicPrefix: p,
        handleBatch: async () => undefined,
      }),
    ).toEqual({ events: 0, setAside: [] });
  });
});
