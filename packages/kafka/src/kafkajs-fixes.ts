// Two timers of kafkajs 2.2.4's request queue (one per broker connection) that keep an idle process awake,
// put right where kafkajs defines them. kafkajs is unmaintained since 2.2.4; this package is the only one that
// creates its clients (see client.ts and raw.ts), and importing this module applies the fixes once.
//
// 1. After every answer, scheduleCheckPendingRequests arms a timer to look at the queue again, even when
//    nothing waits in it; with no throttling its delay is `-1 - Date.now()`, which Node turns into 1 ms. The
//    timer finds nothing, arms itself again, and so on for ever: a 1 ms loop per connection from its first
//    answer on (tulios/kafkajs#1556, #1704; Node 24 also prints TimeoutNegativeWarning for it, #1751). A
//    look is only needed while requests wait (throttled by the broker, or over maxInFlightRequests), and
//    push() arms it when one starts waiting.
// 2. Request timeouts are checked by an interval of min(requestTimeout, 100 ms) per connection: ten wake-ups
//    a second for timeouts of 30 s. Once a second tells a request past its timeout within a second.
import { createRequire } from 'node:module';

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
