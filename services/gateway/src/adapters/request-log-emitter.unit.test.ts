import type { ApiRequestEvent } from '@mds/contracts';
import { createLogger } from '@mds/logging';
import type { OutgoingEvent } from '@mds/kafka';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { ServedRequest } from '../application/request-log.js';
import { createRequestLogEmitter } from './request-log-emitter.js';

const served = (n: number, keyId = 'aaaaaaaaaaaa'): ServedRequest => ({
  companyId: '11111111-1111-4111-8111-111111111111',
  keyId,
  operation: 'send',
  status: 202,
  subjectEventId: `event-${n}`,
  requestId: `request-${n}`,
  receivedAt: new Date(1_000 + n),
  durationMs: 3.4,
});

/** An event log in memory: what it was given, batch by batch; it can be made to hang or fail. */
function eventLog() {
  const batches: OutgoingEvent[][] = [];
  let release: (() => void) | undefined;
  const log = {
    batches,
    failing: false,
    hold() {
      return new Promise<void>((resolve) => (release = resolve));
    },
    holding: undefined as Promise<void> | undefined,
    release: () => release?.(),
    publish: async (events: readonly OutgoingEvent[]) => {
      if (log.holding) await log.holding;
      if (log.failing) throw new Error('broker away');
      batches.push([...events]);
    },
  };
  return log;
}

async function metric(registry: Registry, name: string): Promise<Record<string, number>> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  return Object.fromEntries(
    (found?.values ?? []).map((v) => [Object.values(v.labels).join(',') || '', v.value]),
  );
}

const emitter = (log: ReturnType<typeof eventLog>, registry: Registry, maxBuffered = 5) =>
  createRequestLogEmitter({
    publisher: log,
    logger: createLogger({ service: 'test', level: 'silent' }),
    registry,
    newId: () => crypto.randomUUID(),
    maxBuffered,
    maxBatch: 3,
    flushIntervalMs: 60_000,
    publishTimeoutMs: 1_000,
  });

describe('the request log emitter', () => {
  it("publishes each key's requests of a period as one record, keyed by the key, in the order they came", async () => {
    const log = eventLog();
    const registry = new Registry();
    const requests = emitter(log, registry);
    // Three fill a batch (two keys: two records); the fourth goes at stop.
    requests.record(served(0));
    requests.record(served(1, 'bbbbbbbbbbbb'));
    requests.record(served(2));
    requests.record(served(3));
    await requests.stop();
    expect(log.batches.map((b) => b.map((r) => r.key))).toEqual([
      ['aaaaaaaaaaaa', 'bbbbbbbbbbbb'],
      ['aaaaaaaaaaaa'],
    ]);
    const first = log.batches[0]![0]!;
    expect(first.record).toMatchObject({
      metadata: {
        companyId: served(0).companyId,
        streamId: 'aaaaaaaaaaaa',
        producer: 'gateway',
        type: 'ApiRequestsServed',
        occurredAt: served(0).receivedAt,
      },
      event: {
        $case: 'apiRequestsServed',
        value: {
          requests: [
            {
              keyId: 'aaaaaaaaaaaa',
              status: 202,
              durationMs: 3,
              operation: 'send',
              subjectEventId: 'event-0',
              requestId: 'request-0',
              receivedAt: served(0).receivedAt,
            },
            { subjectEventId: 'event-2', receivedAt: served(2).receivedAt },
          ],
        },
      },
    });
    expect(await metric(registry, 'mds_gateway_request_log_published_total')).toEqual({ '': 4 });
  });

  it('never waits: past its bound it drops and counts, and a batch Kafka refuses is dropped and counted', async () => {
    const log = eventLog();
    const registry = new Registry();
    const requests = emitter(log, registry);
    log.holding = log.hold();
    // The first three go out (and hang); five more fill the buffer; two more are dropped.
    for (let n = 0; n < 10; n++) expect(requests.record(served(n))).toBeUndefined();
    expect(await metric(registry, 'mds_gateway_request_log_dropped_total')).toEqual({ buffer_full: 2 });
    log.failing = true;
    log.release();
    log.holding = undefined;
    await requests.flush();
    expect(log.batches).toEqual([]);
    expect(await metric(registry, 'mds_gateway_request_log_dropped_total')).toEqual({
      buffer_full: 2,
      // The batch in flight, and the next one flush tried.
      publish_failed: 6,
    });
    // Kafka back: what is buffered goes out.
    log.failing = false;
    await requests.stop();
    expect(
      log.batches
        .flat()
        .map((e) => (e.record as ApiRequestEvent).event)
        .flatMap((event) => (event?.$case === 'apiRequestsServed' ? event.value.requests : []))
        .map((r) => r.requestId),
    ).toEqual(['request-6', 'request-7']);
  });
});
