// kafkajs announces a rebalance (REBALANCING) and then, when its rejoin gives up, fetches on in its old
// generation without a GROUP_JOIN. The service was told it holds no partition at REBALANCING, so nothing may
// be handled then: the consumer leaves the group and joins afresh. Driven here with a stand-in for kafkajs's
// consumer that raises its events as kafkajs does.
import { topics } from '@mds/contracts';
import { createLogger } from '@mds/logging';
import type { EachBatchPayload, Kafka } from 'kafkajs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createEventConsumer } from './consumer.js';
import { NO_DEAD_LETTER_TABLE } from './dead-letters.js';

const EVENTS = {
  GROUP_JOIN: 'consumer.group_join',
  REBALANCING: 'consumer.rebalancing',
  FETCH_START: 'consumer.fetch_start',
  REQUEST: 'consumer.network.request',
  CRASH: 'consumer.crash',
  STOP: 'consumer.stop',
};

function fakeKafka() {
  const handlers = new Map<string, ((e: { payload: unknown }) => void)[]>();
  const emit = (event: string, payload: unknown = {}) => {
    for (const h of handlers.get(event) ?? []) h({ payload });
  };
  const assignment = { 't.mds.message.v1': [0, 1] };
  let eachBatch: ((payload: EachBatchPayload) => Promise<void>) | undefined;
  const consumer = {
    events: EVENTS,
    on: (event: string, h: (e: { payload: unknown }) => void) =>
      handlers.set(event, [...(handlers.get(event) ?? []), h]),
    connect: vi.fn(() => Promise.resolve()),
    subscribe: vi.fn(() => Promise.resolve()),
    run: vi.fn((o: { eachBatch: (payload: EachBatchPayload) => Promise<void> }) => {
      eachBatch = o.eachBatch;
      setTimeout(() => emit(EVENTS.GROUP_JOIN, { memberAssignment: assignment }), 0);
      return Promise.resolve();
    }),
    disconnect: vi.fn(() => (emit(EVENTS.STOP), Promise.resolve())),
    pause: vi.fn(),
    resume: vi.fn(),
  };
  const admin = {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    fetchTopicOffsets: () => Promise.resolve([]),
  };
  const kafka = { consumer: () => consumer, admin: () => admin } as unknown as Kafka;
  return { kafka, consumer, emit, eachBatch: () => eachBatch! };
}

function subject() {
  const fake = fakeKafka();
  const assignments: number[][] = [];
  const handleBatch = vi.fn(() => Promise.resolve());
  const consumer = createEventConsumer({
    kafka: fake.kafka,
    logger: createLogger({ service: 'kafka-test', level: 'silent' }),
    groupId: 'g',
    topics: [topics.message],
    topicPrefix: 't.',
    handleBatch,
    deadLetters: NO_DEAD_LETTER_TABLE,
    onAssignment: (partitions) => assignments.push([...(partitions.get('t.mds.message.v1') ?? [])]),
  });
  return { fake, consumer, assignments, handleBatch };
}

const batchOf = (): EachBatchPayload =>
  ({
    batch: { topic: 't.mds.message.v1', partition: 0, highWatermark: '1', messages: [] },
  }) as unknown as EachBatchPayload;

describe('a consumer whose rebalance kafkajs announced and never completed', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('handles nothing meanwhile, leaves the group and joins afresh; the service gets its partitions back', async () => {
    const { fake, consumer, assignments, handleBatch } = subject();
    const started = consumer.start();
    await vi.advanceTimersByTimeAsync(1);
    await started;
    expect(assignments).toEqual([[0, 1]]);

    fake.emit(EVENTS.REBALANCING);
    expect(assignments.at(-1)).toEqual([]);
    // kafkajs's join gave up: it fetches again in its old generation.
    fake.emit(EVENTS.FETCH_START, { nodeId: 1 });
    await fake.eachBatch()(batchOf());
    expect(handleBatch).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(0);
    expect(fake.consumer.disconnect).toHaveBeenCalledOnce();
    expect(consumer.healthy()).toBe(false);

    await vi.advanceTimersByTimeAsync(1_100);
    expect(fake.consumer.run).toHaveBeenCalledTimes(2);
    expect(assignments.at(-1)).toEqual([0, 1]);
    expect(consumer.healthy()).toBe(true);
    await consumer.stop();
  });

  it('goes on as it was when the rebalance ends with a join, as it does', async () => {
    const { fake, consumer, assignments } = subject();
    const started = consumer.start();
    await vi.advanceTimersByTimeAsync(1);
    await started;
    fake.emit(EVENTS.REBALANCING);
    fake.emit(EVENTS.GROUP_JOIN, { memberAssignment: { 't.mds.message.v1': [1] } });
    fake.emit(EVENTS.FETCH_START, { nodeId: 1 });
    await vi.advanceTimersByTimeAsync(2_000);
    expect(fake.consumer.disconnect).not.toHaveBeenCalled();
    expect(assignments).toEqual([[0, 1], [], [1]]);
    await consumer.stop();
  });
});
