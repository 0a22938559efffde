import { spawn } from 'node:child_process';
import { Socket, connect } from 'node:net';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import kafkajs from 'kafkajs';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { MessageEvent } from '@mds/contracts';
import {
  createEventConsumer,
  createEventPublisher,
  kafkaMetrics,
  provisionTopics,
  topicName,
  type ConsumedEvent,
  type EventConsumer,
  type EventPublisher,
  type SetAsideRecord,
  NO_DEAD_LETTER_TABLE,
} from './index.js';
import { ids, logger, messageSent, messageTopic, prefix, testKafka, waitFor } from '../test/support.js';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function publisherFor(topicPrefix: string): Promise<EventPublisher> {
  const publisher = createEventPublisher({ kafka: testKafka(), logger, topicPrefix });
  await publisher.connect();
  cleanups.push(() => publisher.disconnect());
  return publisher;
}

function consumerFor(
  topicPrefix: string,
  groupId: string,
  received: ConsumedEvent<MessageEvent>[],
  extra: Partial<Parameters<typeof createEventConsumer<MessageEvent>>[0]> = {},
): EventConsumer {
  const consumer = createEventConsumer<MessageEvent>({
    kafka: testKafka(),
    logger,
    groupId,
    topics: [messageTopic],
    topicPrefix,
    deadLetters: NO_DEAD_LETTER_TABLE,
    handleBatch: async (events) => {
      received.push(...events);
    },
    ...extra,
  });
  cleanups.push(() => consumer.stop());
  return consumer;
}

describe('topics declared in code', () => {
  it('are created with their partitions and retention, and provisioning twice is harmless', async () => {
    const kafka = testKafka();
    const p = prefix();
    await provisionTopics(kafka, [messageTopic], { prefix: p, historyRetentionDays: 7 });
    await provisionTopics(kafka, [messageTopic], { prefix: p, historyRetentionDays: 7 });
    const admin = kafka.admin();
    await admin.connect();
    try {
      const name = topicName(messageTopic, p);
      const metadata = await admin.fetchTopicMetadata({ topics: [name] });
      expect(metadata.topics[0]!.partitions).toHaveLength(messageTopic.partitions);
      const configs = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          { type: kafkajs.ConfigResourceTypes.TOPIC, name, configNames: ['retention.ms', 'cleanup.policy'] },
        ],
      });
      const entries = Object.fromEntries(
        configs.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]),
      );
      expect(entries).toEqual({ 'retention.ms': String(7 * 24 * 3600 * 1000), 'cleanup.policy': 'delete' });
    } finally {
      await admin.disconnect();
    }
  });
});

describe('publish and consume', () => {
  it('delivers typed events in order per key, with their envelope and headers', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 3 });
    const publisher = await publisherFor(p);
    const messageId = randomUUID();
    const sent = [1, 2, 3, 4, 5].map((n) => messageSent(messageId, n));
    await Promise.all(
      sent.map((record) => publisher.publish([{ topic: messageTopic, key: messageId, record }])),
    );

    const received: ConsumedEvent<MessageEvent>[] = [];
    await consumerFor(p, uniqueName('g'), received).start();
    await waitFor('5 events', () => received.length >= 5);
    expect(received.map((e) => e.record.event.value)).toEqual(sent.map((s) => s.event.value));
    expect(received.every((e) => e.key === messageId && e.partition === received[0]!.partition)).toBe(true);
    expect(received[0]!.record.metadata).toMatchObject({
      type: 'MessageSent',
      streamId: messageId,
      producer: 'kafka-test',
    });
  });

  it('counts what it publishes and consumes in the service metrics', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const registry = new Registry();
    const metrics = kafkaMetrics(registry);
    const publisher = createEventPublisher({ kafka: testKafka(), logger, topicPrefix: p, metrics });
    await publisher.connect();
    cleanups.push(() => publisher.disconnect());
    await publisher.publish([{ topic: messageTopic, key: 'k', record: messageSent('k') }]);
    const received: ConsumedEvent<MessageEvent>[] = [];
    await consumerFor(p, uniqueName('g'), received, { metrics }).start();
    await waitFor('1 event', () => received.length === 1);
    await waitFor('the commit', () => true);
    const text = await registry.metrics();
    expect(text).toMatch(
      new RegExp(
        `mds_events_published_total\\{topic="${p.replaceAll('.', '\\.')}mds\\.message\\.v1",type="MessageSent"\\} 1`,
      ),
    );
    expect(publisher.healthy()).toBe(true);
  });
});

describe('consumer groups', () => {
  it('share the partitions of a topic between two members, each event handled once', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 4 });
    const groupId = uniqueName('g');
    const a: ConsumedEvent<MessageEvent>[] = [];
    const b: ConsumedEvent<MessageEvent>[] = [];
    await consumerFor(p, groupId, a).start();
    await consumerFor(p, groupId, b).start();

    const publisher = await publisherFor(p);
    const records = Array.from({ length: 40 }, (_, i) => messageSent(`message-${i}`, i));
    await publisher.publish(
      records.map((record) => ({ topic: messageTopic, key: record.metadata.streamId, record })),
    );
    await waitFor('40 events', () => a.length + b.length >= 40);
    await new Promise((r) => setTimeout(r, 500));

    const partitionsA = new Set(a.map((e) => e.partition));
    const partitionsB = new Set(b.map((e) => e.partition));
    expect(a.length).toBeGreaterThan(0);
    expect(b.length).toBeGreaterThan(0);
    expect([...partitionsA].filter((x) => partitionsB.has(x))).toEqual([]);
    expect(new Set([...ids(a), ...ids(b)]).size).toBe(40);
    expect(a.length + b.length).toBe(40);
  });
});

describe('a member whose handler keeps failing', () => {
  it('does not hold up a rebalance: a new member gets its partitions in seconds', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 2 });
    const publisher = await publisherFor(p);
    const records = Array.from({ length: 20 }, (_, i) => messageSent(`message-${i}`, i));
    await publisher.publish(
      records.map((record) => ({ topic: messageTopic, key: record.metadata.streamId, record })),
    );
    const groupId = uniqueName('g');
    let failures = 0;
    // Its database is down, say: every batch fails and is retried.
    await consumerFor(p, groupId, [], {
      retryBackoffMs: { initial: 200, max: 1_000 },
      handleBatch: () => {
        failures++;
        return Promise.reject(databaseDown());
      },
    }).start();
    await waitFor('a failing batch', () => failures > 0);

    // Without noticing the rebalance, the failing member would keep it waiting for its rebalance timeout
    // (60 s), retrying a batch whose partition may no longer be its own.
    const joined = Date.now();
    const b: ConsumedEvent<MessageEvent>[] = [];
    // Not awaited: its join is what the failing member would hold up.
    consumerFor(p, groupId, b)
      .start()
      .catch(() => undefined);
    await waitFor('events at the new member', () => b.length > 0, 25_000);
    expect(Date.now() - joined).toBeLessThan(25_000);
  });
});

describe('offsets move only after effects are stored', () => {
  it('an event being handled when the process is killed comes again; the ones before it do not', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const publisher = await publisherFor(p);
    const records = [1, 2, 3].map((n) => messageSent('m', n));
    await publisher.publish(records.map((record) => ({ topic: messageTopic, key: 'm', record })));
    const groupId = uniqueName('g');
    const [first, second, third] = records.map((r) => r.metadata.eventId);

    const child = spawn(
      process.execPath,
      ['--conditions=@mds/source', '--import', 'tsx', join(import.meta.dirname, '../test/crash-consumer.ts')],
      {
        env: { ...process.env, GROUP_ID: groupId, TOPIC_PREFIX: p, BLOCK_ON: second },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await waitFor('the child to block on the second event', () => output.includes('blocking'), 60_000);
    expect(output).toContain(`handled ${first}`);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));

    const received: ConsumedEvent<MessageEvent>[] = [];
    // A short session lets the dead member's partitions move quickly.
    await consumerFor(p, groupId, received, { sessionTimeoutMs: 6_000 }).start();
    await waitFor('the redelivery', () => received.length >= 2, 45_000);
    expect(ids(received)).toEqual([second, third]);
  });

  it('a handler failing for a transient reason is retried with the same batch, never split or skipped', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const publisher = await publisherFor(p);
    const records = [1, 2].map((n) => messageSent('m', n));
    await publisher.publish(records.map((record) => ({ topic: messageTopic, key: 'm', record })));
    let failures = 0;
    const handled: string[] = [];
    const calls: number[] = [];
    const received: ConsumedEvent<MessageEvent>[] = [];
    await consumerFor(p, uniqueName('g'), received, {
      retryBackoffMs: { initial: 50, max: 100 },
      handleBatch: async (events) => {
        if (failures < 5) {
          failures++;
          throw databaseDown();
        }
        handled.push(...ids(events));
        calls.push(events.length);
      },
    }).start();
    await waitFor('both events', () => handled.length >= 2);
    expect(failures).toBe(5);
    expect(handled).toEqual(records.map((r) => r.metadata.eventId));
    expect(calls).toEqual([2]);
  });

  it('a clean stop in the middle commits exactly what was handled; a restart goes on from there', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const publisher = await publisherFor(p);
    const records = Array.from({ length: 20 }, (_, i) => messageSent('m', i));
    await publisher.publish(records.map((record) => ({ topic: messageTopic, key: 'm', record })));
    const groupId = uniqueName('g');
    const handled: string[] = [];
    let stopRequested: Promise<void> | undefined;
    const consumer = createEventConsumer<MessageEvent>({
      kafka: testKafka(),
      logger,
      groupId,
      topics: [messageTopic],
      topicPrefix: p,
      deadLetters: NO_DEAD_LETTER_TABLE,
      maxBatchSize: 2,
      handleBatch: async (events) => {
        await new Promise((r) => setTimeout(r, 20));
        handled.push(...ids(events));
        if (handled.length === 6) stopRequested = consumer.stop();
      },
    });
    await consumer.start();
    await waitFor('the stop', () => stopRequested !== undefined);
    await stopRequested;
    const firstRun = [...handled];
    expect(firstRun).toEqual(records.slice(0, firstRun.length).map((r) => r.metadata.eventId));

    const received: ConsumedEvent<MessageEvent>[] = [];
    await consumerFor(p, groupId, received).start();
    await waitFor('the rest', () => firstRun.length + received.length >= 20);
    expect([...firstRun, ...ids(received)]).toEqual(records.map((r) => r.metadata.eventId));
  });

  it('sets aside a record it cannot decode (retried until that works) and goes on', async () => {
    const p = prefix();
    const kafka = testKafka();
    await provisionTopics(kafka, [messageTopic], { prefix: p, partitions: 1 });
    const raw = kafka.producer();
    await raw.connect();
    await raw.send({
      topic: topicName(messageTopic, p),
      messages: [{ key: 'm', value: Buffer.from([0xff, 0x01]) }],
    });
    await raw.disconnect();
    const publisher = await publisherFor(p);
    const good = messageSent('m');
    await publisher.publish([{ topic: messageTopic, key: 'm', record: good }]);
    const registry = new Registry();
    const received: ConsumedEvent<MessageEvent>[] = [];
    const setAside: SetAsideRecord[] = [];
    let refusals = 0;
    await consumerFor(p, uniqueName('g'), received, {
      metrics: kafkaMetrics(registry),
      retryBackoffMs: { initial: 20, max: 50 },
      deadLetters: {
        setAside: (records) => {
          // The dead-letter table is away once: the records are set aside on the retry, then the rest goes on.
          if (refusals++ === 0) return Promise.reject(new Error('database unavailable'));
          setAside.push(...records);
          return Promise.resolve();
        },
      },
    }).start();
    await waitFor('the good event', () => received.length === 1);
    expect(ids(received)).toEqual([good.metadata.eventId]);
    expect(setAside).toEqual([
      expect.objectContaining({ offset: '0', key: 'm', payload: Buffer.from([0xff, 0x01]) }),
    ]);
    expect(await registry.metrics()).toMatch(/mds_events_undecodable_total\{[^}]*\} 1/);
  });
});

describe('what one fetch brings', () => {
  it('is handed over in one call, whichever partitions it came from, each partition in order', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 6 });
    const publisher = await publisherFor(p);
    const records = Array.from({ length: 60 }, (_, i) => messageSent(`message-${i % 12}`, i));
    await publisher.publish(
      records.map((record) => ({ topic: messageTopic, key: record.metadata.streamId, record })),
    );
    const calls: ConsumedEvent<MessageEvent>[][] = [];
    await consumerFor(p, uniqueName('g'), [], {
      handleBatch: async (events) => {
        calls.push(events);
      },
    }).start();
    await waitFor('60 events', () => calls.flat().length >= 60);
    expect(calls.flat()).toHaveLength(60);
    // Everything was there before the consumer joined: its first fetch had every partition.
    expect(new Set(calls[0]!.map((e) => e.partition)).size).toBeGreaterThan(1);
    for (const partition of new Set(calls.flat().map((e) => e.partition))) {
      const offsets = calls
        .flat()
        .filter((e) => e.partition === partition)
        .map((e) => BigInt(e.offset));
      expect(offsets).toEqual([...offsets].sort((a, b) => (a < b ? -1 : 1)));
    }
  });
});

describe('events a handler defers', () => {
  it('hold the commit of their partition until they are done; a restart brings back the open ones', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const publisher = await publisherFor(p);
    const records = Array.from({ length: 6 }, (_, i) => messageSent('m', i));
    await publisher.publish(records.map((record) => ({ topic: messageTopic, key: 'm', record })));
    const groupId = uniqueName('g');
    const done = new Map<string, () => void>();
    const first = createEventConsumer<MessageEvent>({
      kafka: testKafka(),
      logger,
      groupId,
      topics: [messageTopic],
      topicPrefix: p,
      deadLetters: NO_DEAD_LETTER_TABLE,
      commitIntervalMs: 20,
      handleBatch: async (events, context) => {
        for (const e of events) done.set(e.record.metadata.eventId, context.defer(e));
      },
    });
    await first.start();
    await waitFor('six deferred events', () => done.size === 6);
    const [e0, e1, e2] = records.map((r) => r.metadata.eventId);
    // Done out of order: 0 and 2, not 1. Only offset 0 may be committed.
    done.get(e0!)!();
    done.get(e2!)!();
    await new Promise((r) => setTimeout(r, 200));
    await first.stop();

    const received: ConsumedEvent<MessageEvent>[] = [];
    await consumerFor(p, groupId, received).start();
    await waitFor('the open ones', () => received.length >= 5);
    await new Promise((r) => setTimeout(r, 300));
    expect(ids(received)).toEqual(records.slice(1).map((r) => r.metadata.eventId));
    expect(ids(received)).toContain(e1);
    // All were in the log before this member took the partition: any may have been handled already.
    expect(received.every((e) => e.redelivery)).toBe(true);
  });

  it('are waited for by a stop that drains, then committed', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const publisher = await publisherFor(p);
    const records = Array.from({ length: 3 }, (_, i) => messageSent('m', i));
    await publisher.publish(records.map((record) => ({ topic: messageTopic, key: 'm', record })));
    const groupId = uniqueName('g');
    let seen = 0;
    const consumer = createEventConsumer<MessageEvent>({
      kafka: testKafka(),
      logger,
      groupId,
      topics: [messageTopic],
      topicPrefix: p,
      deadLetters: NO_DEAD_LETTER_TABLE,
      handleBatch: async (events, context) => {
        for (const e of events) {
          const finish = context.defer(e);
          seen++;
          setTimeout(finish, 300);
        }
      },
    });
    await consumer.start();
    await waitFor('three events', () => seen === 3);
    await consumer.stop({ drainMs: 5_000 });

    const received: ConsumedEvent<MessageEvent>[] = [];
    await consumerFor(p, groupId, received).start();
    await publisher.publish([{ topic: messageTopic, key: 'm', record: messageSent('m', 99) }]);
    await waitFor('the new one', () => received.length >= 1);
    await publisher.publish([{ topic: messageTopic, key: 'm', record: messageSent('m', 100) }]);
    await waitFor('one more', () => received.length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    // Nothing the first member deferred came again: it was all done and committed.
    expect(received).toHaveLength(2);
    // Published once this member was reading the partition: no member saw it before.
    expect(received[1]!.redelivery).toBe(false);
  });
});

describe('publishing when Kafka cannot be reached', () => {
  it('is unhealthy after a failed request, and healthy again without new traffic once the broker answers', async () => {
    // A topic that does not exist (and is not created on the fly): the request fails, the broker answers.
    const publisher = createEventPublisher({
      kafka: testKafka(),
      logger,
      topicPrefix: prefix(),
      timeoutMs: 60_000,
    });
    await publisher.connect();
    cleanups.push(() => publisher.disconnect());
    await expect(
      publisher.publish([{ topic: messageTopic, key: 'k', record: messageSent('k') }]),
    ).rejects.toThrow();
    expect(publisher.healthy()).toBe(false);
    await waitFor('healthy again', () => publisher.healthy());
  });

  it('fails to connect within a bounded time instead of hanging', async () => {
    const { createKafkaClient } = await import('./index.js');
    const kafka = createKafkaClient({ brokers: ['127.0.0.1:1'], clientId: 'unreachable' }, logger);
    const publisher = createEventPublisher({ kafka, logger, timeoutMs: 2_000 });
    const started = Date.now();
    await expect(publisher.connect()).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(publisher.healthy()).toBe(false);
  });
});

describe('a produce request whose answer is lost', () => {
  it('does not make a later, different event look like its duplicate (acknowledged but never written)', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    // The broker stores the first request but its answer never arrives, and the broker then stays out of
    // reach until kafkajs gives up. kafkajs hands the sequence numbers of that request back, so a producer
    // that goes on would send the next batch with the very numbers the broker already holds: the broker
    // takes it for a retry, acknowledges it and drops it.
    const network = flakyNetwork();
    const kafka = new kafkajs.Kafka({
      clientId: 'lost-answer',
      brokers: testInfra().kafkaBrokers,
      logLevel: kafkajs.logLevel.NOTHING,
      connectionTimeout: 1_000,
      socketFactory: network.socketFactory,
    });
    const publisher = createEventPublisher({ kafka, logger, topicPrefix: p, timeoutMs: 120_000 });
    await publisher.connect();
    cleanups.push(() => publisher.disconnect());
    await publisher.publish([{ topic: messageTopic, key: 'k', record: messageSent('k', 1) }]);

    network.loseNextProduceAnswer();
    const stored = messageSent('k', 2);
    await expect(publisher.publish([{ topic: messageTopic, key: 'k', record: stored }])).rejects.toThrow();
    network.heal();
    const next = messageSent('k', 3);
    await publisher.publish([{ topic: messageTopic, key: 'k', record: next }]);

    const received: ConsumedEvent<MessageEvent>[] = [];
    await consumerFor(p, uniqueName('g'), received).start();
    await waitFor('the event acknowledged after the outage', () =>
      ids(received).includes(next.metadata.eventId),
    );
    // The request whose answer was lost was stored: the broker had it.
    expect(ids(received)).toContain(stored.metadata.eventId);
  });
});

describe('a consumer kafkajs gives up on', () => {
  it('is started again (kafkajs restarts only after retriable errors) until the service stops', async () => {
    const p = prefix();
    await provisionTopics(testKafka(), [messageTopic], { prefix: p, partitions: 1 });
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    // A session timeout above the broker's group.max.session.timeout.ms (30 min): every join is refused
    // with INVALID_SESSION_TIMEOUT, which kafkajs does not retry.
    const consumer = consumerFor(p, uniqueName('g'), [], {
      sessionTimeoutMs: 3_600_000,
      logger: createLogger({ service: 'kafka-test', level: 'info', destination }),
    });
    const started = consumer.start();
    const crashes = () => lines.filter((l) => l.includes('"msg":"consumer crashed"')).length;
    await waitFor('a second crash after a restart', () => crashes() >= 2);
    expect(lines.some((l) => l.includes('INVALID_SESSION_TIMEOUT') || l.includes('session timeout'))).toBe(
      true,
    );
    await consumer.stop();
    await expect(started).rejects.toThrow(/stopped before it joined/);
    const afterStop = crashes();
    await new Promise((r) => setTimeout(r, 2_500));
    expect(crashes()).toBe(afterStop);
  });
});

/** What pg says when PostgreSQL cannot be reached. */
function databaseDown(): Error {
  return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
}

const PRODUCE_API_KEY = 0;

/**
 * A kafkajs socket factory that can let one produce request reach the broker while its answer is lost, and
 * then refuse every connection until healed.
 */
function flakyNetwork() {
  let loseNextAnswer = false;
  let refusing = false;
  const socketFactory: kafkajs.ISocketFactory = ({ host, port, onConnect }) => {
    if (refusing) {
      const refused = new Socket();
      setImmediate(() =>
        refused.destroy(Object.assign(new Error('connect ECONNREFUSED (test)'), { code: 'ECONNREFUSED' })),
      );
      return refused;
    }
    const socket = connect({ host, port }, onConnect);
    let deaf = false;
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) =>
      deaf && event === 'data' ? true : emit(event, ...args)) as typeof socket.emit;
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
    socket.write = (chunk: unknown, ...rest: unknown[]) => {
      // A request is [size int32][api key int16]...; kafkajs writes each request in one piece.
      if (
        loseNextAnswer &&
        Buffer.isBuffer(chunk) &&
        chunk.length > 6 &&
        chunk.readInt16BE(4) === PRODUCE_API_KEY
      ) {
        loseNextAnswer = false;
        deaf = true;
        setTimeout(() => {
          refusing = true;
          socket.destroy(Object.assign(new Error('read ECONNRESET (test)'), { code: 'ECONNRESET' }));
        }, 1_000);
      }
      return write(chunk, ...rest);
    };
    return socket;
  };
  return {
    socketFactory,
    loseNextProduceAnswer: () => {
      loseNextAnswer = true;
    },
    heal: () => {
      refusing = false;
    },
  };
}
