// No group stops for one record: every consumer of every service is made by createEventConsumer, so what
// these tests show of it holds for each of them (each service also has a test of its own groups).
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Complete, MessageEvent } from '@mds/contracts';
import { uniqueName } from '@mds/local-infra/testing';
import {
  createEventConsumer,
  createEventPublisher,
  kafkaMetrics,
  provisionTopics,
  RefusedRecordError,
  type ConsumedEvent,
  type EventConsumer,
  type EventConsumerOptions,
  type SetAsideRecord,
} from './index.js';
import { ids, logger, messageSent, messageTopic, prefix, testKafka, waitFor } from '../test/support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** A PostgreSQL error as pg and knex report it (the class the consumer judges by its SQLSTATE). */
function databaseError(code: string, message: string): Error {
  return Object.assign(new Error(`insert into "rows" ("text") values ($1) - ${message}`), {
    name: 'error',
    severity: 'ERROR',
    code,
    detail: 'Failing row contains (+79123456789, a text).',
    table: 'rows',
  });
}

async function published(p: string, records: Complete<MessageEvent>[]): Promise<void> {
  const publisher = createEventPublisher({ kafka: testKafka(), logger, topicPrefix: p });
  await publisher.connect();
  try {
    await publisher.publish(
      records.map((record) => ({ topic: messageTopic, key: record.metadata.streamId, record })),
    );
  } finally {
    await publisher.disconnect();
  }
}

/**
 * A consumer whose handler stores like a service does, one transaction per call: if any event of the call
 * is one it cannot store, the whole call fails and nothing of it is kept.
 */
function storingConsumer(
  p: string,
  o: {
    groupId?: string;
    failsOn: (e: ConsumedEvent<MessageEvent>) => Error | undefined;
    stored: ConsumedEvent<MessageEvent>[];
    setAside: SetAsideRecord[];
    calls?: ConsumedEvent<MessageEvent>[][];
  } & Partial<EventConsumerOptions<MessageEvent>>,
): EventConsumer {
  const { failsOn, stored, setAside, calls, ...options } = o;
  const consumer = createEventConsumer<MessageEvent>({
    kafka: testKafka(),
    logger,
    groupId: uniqueName('g'),
    topics: [messageTopic],
    topicPrefix: p,
    retryBackoffMs: { initial: 20, max: 200 },
    commitIntervalMs: 50,
    deadLetters: {
      setAside: (records) => {
        setAside.push(...records);
        return Promise.resolve();
      },
    },
    handleBatch: (events) => {
      calls?.push(events);
      for (const e of events) {
        const error = failsOn(e);
        if (error) return Promise.reject(error);
      }
      stored.push(...events);
      return Promise.resolve();
    },
    ...options,
  });
  cleanups.push(() => consumer.stop());
  return consumer;
}

describe('a record the handler cannot store', () => {
  it('is set aside with its bytes and why, and every other record of every partition is stored once, in order', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 3 });
    const records = Array.from({ length: 30 }, (_, i) => messageSent(`message-${i % 6}`, i));
    const poison = records[13]!;
    await published(p, records);
    const stored: ConsumedEvent<MessageEvent>[] = [];
    const setAside: SetAsideRecord[] = [];
    const registry = new Registry();
    const groupId = uniqueName('g');
    const consumer = storingConsumer(p, {
      groupId,
      metrics: kafkaMetrics(registry),
      stored,
      setAside,
      // The text held a NUL: PostgreSQL refuses it (22P05) however often it comes.
      failsOn: (e) =>
        e.record.metadata.eventId === poison.metadata.eventId
          ? databaseError('22P05', 'unsupported Unicode escape sequence')
          : undefined,
    });
    await consumer.start();
    await waitFor('the 29 others', () => stored.length >= 29);
    await waitFor('the one set aside', () => setAside.length >= 1);
    expect(new Set(ids(stored)).size).toBe(29);
    expect(ids(stored)).not.toContain(poison.metadata.eventId);
    for (const partition of new Set(stored.map((e) => e.partition))) {
      const offsets = stored.filter((e) => e.partition === partition).map((e) => BigInt(e.offset));
      expect(offsets).toEqual([...offsets].sort((a, b) => (a < b ? -1 : 1)));
    }
    expect(setAside).toEqual([
      expect.objectContaining({
        group: groupId,
        key: poison.metadata.streamId,
        payload: Buffer.from(messageTopic.codec.encode(poison)),
        reason: 'refused: DatabaseError 22P05 (data exception), table rows',
      }),
    ]);
    // Nothing of the row in the reason: no number, no text.
    expect(setAside[0]!.reason).not.toMatch(/7912|a text/);
    expect(await registry.metrics()).toMatch(/mds_consumer_records_set_aside_total\{[^}]*\} 1/);

    // Committed past it: the group's next member starts after it.
    await consumer.stop();
    const marker = messageSent('message-0', 99);
    await published(p, [marker]);
    const next: ConsumedEvent<MessageEvent>[] = [];
    await storingConsumer(p, { groupId, stored: next, setAside: [], failsOn: () => undefined }).start();
    await waitFor('the marker', () => next.length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(ids(next)).toEqual([marker.metadata.eventId]);
  });

  it('refused by the handler itself (RefusedRecordError) is set aside at once; a bug is tried again first', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const records = Array.from({ length: 6 }, (_, i) => messageSent('m', i));
    const [refused, buggy] = [records[1]!, records[4]!];
    await published(p, records);
    const stored: ConsumedEvent<MessageEvent>[] = [];
    const setAside: SetAsideRecord[] = [];
    const tries = new Map<string, number>();
    await storingConsumer(p, {
      stored,
      setAside,
      maxBatchSize: 1,
      failsOn: (e) => {
        const id = e.record.metadata.eventId;
        tries.set(id, (tries.get(id) ?? 0) + 1);
        if (id === refused.metadata.eventId)
          return new RefusedRecordError('the text holds a control character');
        if (id === buggy.metadata.eventId)
          return new TypeError("Cannot read properties of undefined (reading 'x')");
        return undefined;
      },
    }).start();
    await waitFor('two set aside', () => setAside.length >= 2);
    await waitFor('the others', () => stored.length >= 4);
    expect(setAside.map((r) => r.reason)).toEqual(['refused: RefusedRecordError', 'refused: TypeError']);
    expect(tries.get(refused.metadata.eventId)).toBe(1);
    expect(tries.get(buggy.metadata.eventId)).toBe(3);
    expect(ids(stored)).toEqual(
      records.filter((r) => r !== refused && r !== buggy).map((r) => r.metadata.eventId),
    );
  });
});

describe('a fault that is not the records', () => {
  it('sets nothing aside when every record fails alike (a missing table), and stores them all once it is fixed', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 2 });
    const records = Array.from({ length: 20 }, (_, i) => messageSent(`message-${i % 4}`, i));
    await published(p, records);
    const stored: ConsumedEvent<MessageEvent>[] = [];
    const setAside: SetAsideRecord[] = [];
    const calls: ConsumedEvent<MessageEvent>[][] = [];
    let fixed = false;
    await storingConsumer(p, {
      stored,
      setAside,
      calls,
      failsOn: () => (fixed ? undefined : databaseError('42P01', 'relation "rows" does not exist')),
    }).start();
    // Tried, narrowed down to single records, each failing alone: the fault is not theirs.
    await waitFor('records tried alone', () => calls.filter((c) => c.length === 1).length >= 6, 30_000);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(setAside).toEqual([]);
    fixed = true;
    await waitFor('all stored', () => stored.length >= 20, 30_000);
    expect(new Set(ids(stored))).toEqual(new Set(records.map((r) => r.metadata.eventId)));
    expect(setAside).toEqual([]);
  });

  it('arriving one record at a time, sets aside at most maxSetAsideInARow before it waits', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const stored: ConsumedEvent<MessageEvent>[] = [];
    const setAside: SetAsideRecord[] = [];
    const calls: ConsumedEvent<MessageEvent>[][] = [];
    let fixed = false;
    await storingConsumer(p, {
      stored,
      setAside,
      calls,
      maxSetAsideInARow: 2,
      failsOn: () => (fixed ? undefined : databaseError('42P01', 'relation "rows" does not exist')),
    }).start();
    const records = Array.from({ length: 4 }, (_, i) => messageSent('m', i));
    for (const [i, record] of records.entries()) {
      await published(p, [record]);
      // Each comes alone: the two first are set aside (nothing says yet that the fault is not theirs).
      if (i < 2) await waitFor(`record ${i} set aside`, () => setAside.length === i + 1);
    }
    await waitFor('the third tried again after waiting', () => calls.length >= 8, 30_000);
    expect(setAside).toHaveLength(2);
    fixed = true;
    await waitFor('the rest stored', () => stored.length >= 2, 30_000);
    expect(ids(stored)).toEqual(records.slice(2).map((r) => r.metadata.eventId));
  });
});

describe('lag', () => {
  it("grows in records and seconds (from the events' own time) while a batch is stuck, and is 0 once caught up", async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const registry = new Registry();
    const metrics = kafkaMetrics(registry);
    let away = true;
    const stored: ConsumedEvent<MessageEvent>[] = [];
    const groupId = uniqueName('g');
    const consumer = storingConsumer(p, {
      groupId,
      metrics,
      stored,
      setAside: [],
      // The database is away: nothing is stored, nothing set aside.
      failsOn: () =>
        away
          ? Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })
          : undefined,
    });
    await consumer.start();
    const old = (n: number) => {
      const r = messageSent('m', n);
      r.metadata.occurredAt = new Date(Date.now() - 120_000);
      return r;
    };
    await published(p, [old(1), old(2)]);
    const gauge = async (name: string) => {
      const line = (await registry.metrics())
        .split('\n')
        .find((l) => l.startsWith(`${name}{group="${groupId}"`));
      return line ? Number(line.split(' ').pop()) : undefined;
    };
    await waitFor('two records behind', () => consumer.lag()[0]?.records === 2);
    expect(await gauge('mds_consumer_lag_seconds')).toBeGreaterThanOrEqual(120);
    expect(await gauge('mds_consumer_lag_records')).toBe(2);
    // No fetch while the batch is stuck: the log's end is asked of the broker.
    await published(p, [old(3), old(4), old(5)]);
    await waitFor('five records behind', () => consumer.lag()[0]?.records === 5, 20_000);
    expect(await gauge('mds_consumer_lag_records')).toBe(5);
    away = false;
    await waitFor('all stored', () => stored.length >= 5, 20_000);
    await waitFor(
      'caught up',
      () => consumer.lag()[0]?.records === 0 && consumer.lag()[0]?.oldestPendingAt === undefined,
    );
    expect(await gauge('mds_consumer_lag_seconds')).toBe(0);
    expect(await gauge('mds_consumer_lag_records')).toBe(0);
  });
});
