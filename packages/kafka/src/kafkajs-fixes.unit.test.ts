import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ConsumerGroupClass,
  REQUEST_TIMEOUT_CHECK_MS,
  RequestQueueClass,
  joinWhileCoordinatorLoads,
} from './kafkajs-fixes.js';

// kafkajs's own request queue (one per broker connection), with the fixes applied, driven as a connection
// drives it: push() when a request goes out, fulfillRequest() when its answer comes.

const quietLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

function queue(o: { maxInFlightRequests?: number; requestTimeout?: number } = {}) {
  return new RequestQueueClass({
    maxInFlightRequests: o.maxInFlightRequests ?? null,
    requestTimeout: o.requestTimeout ?? 30_000,
    enforceRequestTimeout: true,
    clientId: 'test',
    broker: 'localhost:9092',
    logger: quietLogger,
  }) as InstanceType<typeof RequestQueueClass> & {
    push(request: unknown): void;
    fulfillRequest(answer: { correlationId: number; payload: Buffer; size: number }): void;
    maybeThrottle(ms: number): void;
  };
}

function request(correlationId: number) {
  const entry = {
    correlationId,
    apiKey: 0,
    apiName: 'Produce',
    apiVersion: 7,
    resolve: vi.fn(),
    reject: vi.fn(),
  };
  const sent = vi.fn();
  return { entry, sent, pushed: { entry, expectResponse: true, sendRequest: sent } };
}

describe("kafkajs's request queue, with its idle timers fixed", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('arms no timer once an answer leaves nothing waiting (kafkajs 2.2.4 looped every 1 ms for ever)', () => {
    const q = queue();
    const r = request(1);
    q.push(r.pushed);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(r.entry.resolve).toHaveBeenCalledOnce();
    expect(q.throttleCheckTimeoutId).toBeNull();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('still sends a request that waited for a free slot as soon as one is free', () => {
    const q = queue({ maxInFlightRequests: 1 });
    const [first, second] = [request(1), request(2)];
    q.push(first.pushed);
    q.push(second.pushed);
    expect(second.sent).not.toHaveBeenCalled();
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(second.sent).toHaveBeenCalledOnce();
    q.destroy();
  });

  it('still sends a request held back by a broker throttle once the throttle ends', () => {
    const q = queue();
    q.maybeThrottle(200);
    const r = request(1);
    q.push(r.pushed);
    expect(r.sent).not.toHaveBeenCalled();
    vi.advanceTimersByTime(199);
    expect(r.sent).not.toHaveBeenCalled();
    vi.advanceTimersByTime(20);
    expect(r.sent).toHaveBeenCalledOnce();
    q.destroy();
  });

  it('checks request timeouts once a second, not ten times, and still times a request out', () => {
    const q = queue({ requestTimeout: 30_000 });
    const setInterval = vi.spyOn(globalThis, 'setInterval');
    q.scheduleRequestTimeoutCheck();
    expect(setInterval).toHaveBeenLastCalledWith(expect.any(Function), REQUEST_TIMEOUT_CHECK_MS);
    const r = request(1);
    q.push(r.pushed);
    // Only the timeout check's interval is armed (kafkajs had it run every 100 ms).
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(30_000);
    expect(r.entry.reject).not.toHaveBeenCalled();
    vi.advanceTimersByTime(REQUEST_TIMEOUT_CHECK_MS);
    expect(r.entry.reject).toHaveBeenCalledOnce();
    expect(String(r.entry.reject.mock.calls[0]![0])).toMatch(/timed out/);
    q.destroy();
  });
});

const requireKafkajs = createRequire(createRequire(import.meta.url).resolve('kafkajs'));
const { createErrorFromCode } = requireKafkajs('./src/protocol/error.js') as {
  createErrorFromCode(code: number): Error & { type: string };
};
const GROUP_LOAD_IN_PROGRESS = 14;
const NOT_COORDINATOR = 16;
const INVALID_SESSION_TIMEOUT = 26;

describe("kafkajs's consumer group, joining while its coordinator loads", () => {
  /** A real ConsumerGroup of kafkajs, whose coordinator answers JoinGroup with `answers` in turn. */
  function group(answers: (number | 'joined')[]) {
    const joinGroup = vi.fn(() => {
      const answer = answers.shift();
      if (answer === undefined || answer === 'joined')
        return Promise.resolve({
          generationId: 7,
          leaderId: 'member-1',
          memberId: 'member-1',
          members: [],
          groupProtocol: 'RoundRobinAssigner',
        });
      return Promise.reject(createErrorFromCode(answer));
    });
    const emitter = new EventEmitter();
    const joined = vi.fn();
    emitter.on('consumer.group_join', joined);
    const g = new ConsumerGroupClass({
      retry: { initialRetryTime: 1, retries: 5 },
      cluster: { findGroupCoordinator: () => Promise.resolve({ joinGroup }) },
      groupId: 'g',
      topics: ['t'],
      logger: { namespace: () => quietLogger },
      instrumentationEmitter: emitter,
      assigners: [{ protocol: () => ({ name: 'RoundRobinAssigner', metadata: Buffer.alloc(0) }) }],
      sessionTimeout: 10_000,
      rebalanceTimeout: 60_000,
    }) as InstanceType<typeof ConsumerGroupClass> & Record<symbol, unknown>;
    // SyncGroup is not what this is about: the join is.
    const sync = Object.getOwnPropertySymbols(ConsumerGroupClass.prototype).find(
      (s) => s.description === 'private:ConsumerGroup:sync',
    )!;
    g[sync] = () => Promise.resolve();
    return { g, joinGroup, joined };
  }

  it('joins once the coordinator has loaded the group (kafkajs 2.2.4 gave up, and went on unjoined)', async () => {
    const { g, joinGroup, joined } = group([GROUP_LOAD_IN_PROGRESS, GROUP_LOAD_IN_PROGRESS, 'joined']);
    await g.joinAndSync();
    expect(joinGroup).toHaveBeenCalledTimes(3);
    expect(joined).toHaveBeenCalledOnce();
  });

  it('still retries a coordinator that moved, and still gives up on an error no retry mends', async () => {
    const moved = group([NOT_COORDINATOR, 'joined']);
    await moved.g.joinAndSync();
    expect(moved.joined).toHaveBeenCalledOnce();
    const refused = group([INVALID_SESSION_TIMEOUT]);
    await expect(refused.g.joinAndSync()).rejects.toMatchObject({ type: 'INVALID_SESSION_TIMEOUT' });
    expect(refused.joinGroup).toHaveBeenCalledOnce();
  });

  it('gives up once the coordinator has loaded for longer than the wait', async () => {
    vi.useFakeTimers();
    try {
      const join = vi.fn(() => Promise.reject(createErrorFromCode(GROUP_LOAD_IN_PROGRESS)));
      const given = expect(joinWhileCoordinatorLoads(join, 1_000).call(undefined)).rejects.toMatchObject({
        type: 'GROUP_LOAD_IN_PROGRESS',
      });
      await vi.advanceTimersByTimeAsync(5_000);
      await given;
      // 100, 200, 400, 800 ms apart: the fifth try is past the second.
      expect(join).toHaveBeenCalledTimes(5);
    } finally {
      vi.useRealTimers();
    }
  });
});
