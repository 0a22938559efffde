import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { MessageEvent } from '@mds/contracts';
import {
  freePort,
  KAFKA_3_VERSION,
  loggedKafkaVersion,
  startKafkaBroker,
  stopProcess,
  type StartedBroker,
} from '@mds/local-infra';
import { uniqueName } from '@mds/local-infra/testing';
import {
  createEventConsumer,
  createEventPublisher,
  createKafkaClient,
  NO_DEAD_LETTER_TABLE,
  provisionTopics,
  type ConsumedEvent,
  type EventConsumer,
  type Kafka,
} from './index.js';
import { ids, logger, messageSent, messageTopic, prefix, waitFor } from '../test/support.js';

// Kafka 4 is what everything else runs on; Apache Kafka 3.9, the last 3.x line, stays supported, and this is
// the job that keeps it so: a broker of its own, and what every service does on it through this package
// (topics provisioned, events published with acks from all in-sync replicas, a consumer group sharing a topic
// and rebalancing when a member leaves).

const dir = mkdtempSync(join(tmpdir(), 'mds-kafka-3-'));
let broker: StartedBroker | undefined;
let kafka: Kafka;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  const [port, controllerPort] = [await freePort(), await freePort()];
  broker = await startKafkaBroker({ version: KAFKA_3_VERSION, dir, port, controllerPort, heapMb: 256 });
  kafka = createKafkaClient({ brokers: [broker.brokers], clientId: 'kafka-3-test' }, logger);
}, 120_000);

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

afterAll(async () => {
  if (broker) await stopProcess(broker.pid, 15_000);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

function member(
  topicPrefix: string,
  groupId: string,
  received: ConsumedEvent<MessageEvent>[],
): EventConsumer {
  const consumer = createEventConsumer<MessageEvent>({
    kafka,
    logger,
    groupId,
    deadLetters: NO_DEAD_LETTER_TABLE,
    topics: [messageTopic],
    topicPrefix,
    sessionTimeoutMs: 6_000,
    handleBatch: async (events) => {
      received.push(...events);
    },
  });
  cleanups.push(() => consumer.stop());
  return consumer;
}

describe(`on Apache Kafka ${KAFKA_3_VERSION}`, () => {
  it('is the broker that runs', () => {
    expect(loggedKafkaVersion(broker!.logFile)).toBe(KAFKA_3_VERSION);
  });

  it('publishes with acks from all in-sync replicas, and a group shares the topic, then rebalances when a member leaves', async () => {
    const p = prefix();
    await provisionTopics(kafka, [messageTopic], { prefix: p, partitions: 4 });
    const publisher = createEventPublisher({ kafka, logger, topicPrefix: p });
    await publisher.connect();
    cleanups.push(() => publisher.disconnect());
    const publish = (records: ReturnType<typeof messageSent>[]) =>
      publisher.publish(
        records.map((record) => ({ topic: messageTopic, key: record.metadata.streamId, record })),
      );

    const groupId = uniqueName('g');
    const a: ConsumedEvent<MessageEvent>[] = [];
    const b: ConsumedEvent<MessageEvent>[] = [];
    const first = member(p, groupId, a);
    await first.start();
    await member(p, groupId, b).start();

    const before = Array.from({ length: 40 }, (_, i) => messageSent(`before-${i}`, i));
    await publish(before);
    await waitFor('40 events', () => a.length + b.length >= 40);
    expect(a.length).toBeGreaterThan(0);
    expect(b.length).toBeGreaterThan(0);
    const partitionsOf = (events: ConsumedEvent<MessageEvent>[]) => new Set(events.map((e) => e.partition));
    expect([...partitionsOf(a)].filter((x) => partitionsOf(b).has(x))).toEqual([]);
    expect(new Set([...ids(a), ...ids(b)])).toEqual(new Set(before.map((r) => r.metadata.eventId)));

    // The first member leaves: the second is given its partitions and gets everything published after.
    await first.stop();
    const after = Array.from({ length: 40 }, (_, i) => messageSent(`after-${i}`, i));
    await publish(after);
    const wanted = new Set(after.map((r) => r.metadata.eventId));
    // Only these: events it had handled before may come again (at least once), none of them is lost.
    const laterAtB = () => b.filter((e) => wanted.has(e.record.metadata.eventId));
    await waitFor(
      'the 40 later events at the member that stayed',
      () => new Set(ids(laterAtB())).size === 40,
      45_000,
    );
    expect(partitionsOf(laterAtB()).size).toBe(4);
    expect(a.filter((e) => wanted.has(e.record.metadata.eventId))).toEqual([]);
  });
});
