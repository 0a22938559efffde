// Fixes of kafkajs 2.2.4, put right where kafkajs defines them. kafkajs is unmaintained since 2.2.4; this
// package is the only one that creates its clients (see client.ts and raw.ts), and importing this module
// applies the fixes once.
//
// Two timers of its request queue (one per broker connection) that keep an idle process awake:
// 1. After every answer, scheduleCheckPendingRequests arms a timer to look at the queue again, even when
//    nothing waits in it; with no throttling its delay is `-1 - Date.now()`, which Node turns into 1 ms. The
//    timer finds nothing, arms itself again, and so on for ever: a 1 ms loop per connection from its first
//    answer on (tulios/kafkajs#1556, #1704; Node 24 also prints TimeoutNegativeWarning for it, #1751). A
//    look is only needed while requests wait (throttled by the broker, or over maxInFlightRequests), and
//    push() arms it when one starts waiting.
// 2. Request timeouts are checked by an interval of min(requestTimeout, 100 ms) per connection: ten wake-ups
//    a second for timeouts of 30 s. Once a second tells a request past its timeout within a second.
//
// And a rejoin that gives up while the group's coordinator moves:
// 3. When a group's coordinator moves (a broker back, and Kafka hands it its preferred leaderships, among
//    them __consumer_offsets's), the new coordinator answers JoinGroup with GROUP_LOAD_IN_PROGRESS while
//    it loads the group. joinAndSync retries only rebalance errors and gives up on this one; the runner
//    then fetches on in its old generation, which the loaded coordinator still takes heartbeats for, and
//    never joins: no GROUP_JOIN comes after the REBALANCING it announced (tulios/kafkajs PR #1779, open).
//    Every member that told its service "no partitions" at REBALANCING stays so. The cluster drills lost
//    38 messages to it (a sender's lanes dropped at REBALANCING, never taken up again). joinAndSync now
//    tries again while the coordinator loads, as the Java client and sarama do.
import { createRequire } from 'node:module';
import { retryUntil } from '@mds/async';

interface RequestQueue {
  pending: unknown[];
  inflight: Map<number, { sentAt: number; requestTimeout: number; timeoutRequest(): void }>;
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  requestTimeoutIntervalId: NodeJS.Timeout | undefined;
  requestTimeout: number;
  enforceRequestTimeout: boolean;
  isConnected(): boolean;
  checkPendingRequests(): void;
  destroy(): void;
  scheduleCheckPendingRequests(): void;
  scheduleRequestTimeoutCheck(): void;
}

/** kafkajs's own value: how soon a queue looks again at requests that wait without a throttle. */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10;
/** How often in-flight requests are checked against their timeout (kafkajs: every 100 ms). */
export const REQUEST_TIMEOUT_CHECK_MS = 1_000;

const requireKafkajs = createRequire(createRequire(import.meta.url).resolve('kafkajs'));
/** kafkajs's RequestQueue class: the one its connections use (one copy of kafkajs is installed). */
export const RequestQueueClass = requireKafkajs('./src/network/requestQueue/index.js') as {
  prototype: RequestQueue;
  new (options: Record<string, unknown>): RequestQueue;
};

const proto = RequestQueueClass.prototype;
if (
  typeof proto.scheduleCheckPendingRequests !== 'function' ||
  typeof proto.scheduleRequestTimeoutCheck !== 'function'
)
  throw new Error(
    'kafkajs changed: its RequestQueue no longer has the methods @mds/kafka fixes (see kafkajs-fixes.ts)',
  );

proto.scheduleCheckPendingRequests = function (this: RequestQueue) {
  if (this.throttleCheckTimeoutId || this.pending.length === 0) return;
  const throttledFor = this.throttledUntil - Date.now();
  this.throttleCheckTimeoutId = setTimeout(
    () => {
      this.throttleCheckTimeoutId = null;
      this.checkPendingRequests();
    },
    throttledFor > 0 ? throttledFor : CHECK_PENDING_REQUESTS_INTERVAL_MS,
  );
};

proto.scheduleRequestTimeoutCheck = function (this: RequestQueue) {
  if (!this.enforceRequestTimeout) return;
  this.destroy();
  this.requestTimeoutIntervalId = setInterval(
    () => {
      const now = Date.now();
      for (const request of this.inflight.values())
        if (now - request.sentAt > request.requestTimeout) request.timeoutRequest();
      if (!this.isConnected()) this.destroy();
    },
    Math.min(this.requestTimeout, REQUEST_TIMEOUT_CHECK_MS),
  );
};

/** kafkajs's consumer group (one per consumer): the class whose joinAndSync gives up while a coordinator loads. */
export const ConsumerGroupClass = requireKafkajs('./src/consumer/consumerGroup.js') as {
  prototype: { joinAndSync: (this: unknown) => Promise<void> };
  new (options: Record<string, unknown>): { joinAndSync: (this: unknown) => Promise<void> };
};

/** Answers of a coordinator that is there soon: it loads the group's offsets, or is being elected. */
const COORDINATOR_NOT_READY = new Set(['GROUP_LOAD_IN_PROGRESS', 'GROUP_COORDINATOR_NOT_AVAILABLE']);
/** How long a join keeps trying while the coordinator loads: kafkajs's rebalance timeout (60 s). */
const COORDINATOR_LOAD_WAIT_MS = 60_000;

const coordinatorNotReady = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  COORDINATOR_NOT_READY.has(String((error as { type?: unknown }).type));

/** A join (and sync) tried again, backing off from 100 ms to 2 s, while the group's coordinator is not ready. */
export function joinWhileCoordinatorLoads<T>(
  joinAndSync: (this: T) => Promise<void>,
  waitMs: number,
): (this: T) => Promise<void> {
  return function (this: T) {
    const until = Date.now() + waitMs;
    return retryUntil(() => joinAndSync.call(this), {
      initialMs: 100,
      maxMs: 2_000,
      shouldRetry: (error) => coordinatorNotReady(error) && Date.now() < until,
    });
  };
}

const groupProto = ConsumerGroupClass.prototype;
if (typeof groupProto.joinAndSync !== 'function')
  throw new Error('kafkajs changed: its ConsumerGroup no longer has joinAndSync (see kafkajs-fixes.ts)');
groupProto.joinAndSync = joinWhileCoordinatorLoads(groupProto.joinAndSync, COORDINATOR_LOAD_WAIT_MS);
