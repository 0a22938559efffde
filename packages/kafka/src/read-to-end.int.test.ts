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
    ).toEqual({ events: 0 });
  });
});
