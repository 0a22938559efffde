import type { Logger } from '@mds/logging';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { EventLog } from '../application/ports.js';
import { apiRequestsServed, byKey, type ServedRequest } from '../application/request-log.js';

export interface RequestLogEmitter {
  /** Takes a request's record for the log; never waits, never throws (a full buffer drops it, counted). */
  record(request: ServedRequest): void;
  /** Publishes what is buffered, once (at shutdown). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The per-key request log, off the request path: records wait in a bounded buffer and go to Kafka every
 * `flushIntervalMs` or as soon as `maxBatch` are waiting, one Kafka record per key holding its requests. Nothing waits for them: when the buffer is full
 * (Kafka slow or away) a record is dropped, and so is a batch Kafka did not take; both are counted in
 * `mds_gateway_request_log_dropped_total`. The log is for people reading it, never a source of truth.
 */
export function createRequestLogEmitter(o: {
  publisher: EventLog;
  logger: Logger;
  registry: Registry;
  newId: () => string;
  maxBuffered: number;
  maxBatch: number;
  flushIntervalMs: number;
  publishTimeoutMs: number;
}): RequestLogEmitter {
  let buffer: ServedRequest[] = [];
  let publishing: Promise<void> | undefined;
  let lastWarning = 0;
  const dropped = new Counter({
    name: 'mds_gateway_request_log_dropped_total',
    help: 'API request log records dropped: buffer full (Kafka slow or away), or a batch Kafka did not take',
    labelNames: ['reason'],
    registers: [o.registry],
  });
  const published = new Counter({
    name: 'mds_gateway_request_log_published_total',
    help: 'API request log records published to Kafka',
    registers: [o.registry],
  });
  new Gauge({
    name: 'mds_gateway_request_log_buffered',
    help: 'API request log records waiting to be published',
    registers: [o.registry],
    collect() {
      this.set(buffer.length);
    },
  });

  async function publishBatch(): Promise<void> {
    while (buffer.length > 0) {
      const batch = buffer.slice(0, o.maxBatch);
      buffer = buffer.slice(batch.length);
      try {
        await o.publisher.publish(
          byKey(batch).map((requests) => apiRequestsServed(requests, o.newId())),
          { timeoutMs: o.publishTimeoutMs },
        );
        published.inc(batch.length);
      } catch (error) {
        dropped.inc({ reason: 'publish_failed' }, batch.length);
        // At most one warning a minute: while Kafka is away every batch fails.
        if (Date.now() - lastWarning > 60_000) {
          lastWarning = Date.now();
          o.logger.warn({ err: error, dropped: batch.length }, 'API request log records not published');
        }
        return;
      }
    }
  }

  function publishNow(): Promise<void> {
    publishing ??= publishBatch().finally(() => (publishing = undefined));
    return publishing;
  }

  const timer = setInterval(() => void publishNow(), o.flushIntervalMs);
  timer.unref();

  return {
    record(request) {
      if (buffer.length >= o.maxBuffered) {
        dropped.inc({ reason: 'buffer_full' });
        return;
      }
      buffer.push(request);
      if (buffer.length >= o.maxBatch && !publishing) void publishNow();
    },
    async flush() {
      await publishing;
      await publishNow();
    },
    async stop() {
      clearInterval(timer);
      await this.flush();
    },
  };
}
