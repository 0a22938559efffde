import { cleanText } from '@mds/contracts';
import { deciderSpec } from '@mds/eventsourcing';
import { describe, expect, it } from 'vitest';
import {
  delivery,
  reachedEndpoint,
  type Answer,
  type DeliveryCommand,
  type DeliveryEvent,
  type EndpointAtAttempt,
} from './delivery.js';
import { DEFAULT_POLICY, type AttemptResult } from './schedule.js';

// Given-when-then over one delivery under one lease (@mds/eventsourcing): the row claimed, then the attempt.
const spec = deciderSpec(delivery, expect);
type Started = Extract<DeliveryEvent, { type: 'AttemptStarted' }>;
type Recorded = Extract<DeliveryEvent, { type: 'AttemptRecorded' }>;
const at = (second: number) => new Date(Date.UTC(2026, 10, 24, 12, 0, second));
const URL = 'https://example.com/hook';
const endpoint = (more: Partial<EndpointAtAttempt> = {}): EndpointAtAttempt => ({
  url: URL,
  enabled: true,
  secrets: [{ secret: 'whsec_current' }],
  ...more,
});

const claimed = (attempts = 0, manual = false): DeliveryEvent => ({
  type: 'DeliveryClaimed',
  attempts,
  manual,
});
const start = (second: number, target: EndpointAtAttempt | undefined = endpoint()): DeliveryCommand => ({
  type: 'StartAttempt',
  at: at(second),
  endpoint: target,
});
const started = (attempt: number, second: number): Started => ({
  type: 'AttemptStarted',
  attempt,
  at: at(second),
  url: URL,
  secrets: ['whsec_current'],
});
const answer = (result: AttemptResult): Answer => ({ result, latencyMs: 12, responseExcerpt: 'ok' });
const answered = (result: AttemptResult, second: number): DeliveryCommand => ({
  type: 'RecordAnswer',
  at: at(second),
  answer: answer(result),
  random: 0.5,
  policy: DEFAULT_POLICY,
});
const http = (status: number, more: object = {}): AttemptResult => ({ kind: 'response', status, ...more });
const recorded = (
  attempt: number,
  result: AttemptResult,
  decision: Recorded['decision'],
  second = 1,
): Recorded => ({
  type: 'AttemptRecorded',
  attempt,
  startedAt: at(0),
  at: at(second),
  url: URL,
  answer: answer(result),
  decision,
});
const afterSeconds = (second: number, wait: number) => new Date(at(second).getTime() + wait * 1000);

describe('starting an attempt', () => {
  it('asks for a POST signed with the secrets valid now, numbered after the attempts before', () => {
    const rotated = endpoint({
      secrets: [
        { secret: 'whsec_current' },
        { secret: 'whsec_expired', expiresAt: at(0) },
        { secret: 'whsec_rotated', expiresAt: at(60) },
      ],
    });
    spec
      .given([claimed(2)])
      .when(start(0, rotated))
      .then([{ ...started(3, 0), secrets: ['whsec_current', 'whsec_rotated'] }]);
  });

  it('gives up unsent when the endpoint was removed, is disabled or has no secret left', () => {
    const unsent = (reason: string, url = URL): DeliveryEvent => ({
      type: 'AttemptRecorded',
      attempt: 1,
      startedAt: at(0),
      at: at(0),
      url,
      answer: { result: { kind: 'no_endpoint', error: reason }, latencyMs: 0, responseExcerpt: '' },
      decision: { outcome: 'gave_up', reason },
    });
    spec
      .given([claimed()])
      .when({ type: 'StartAttempt', at: at(0), endpoint: undefined })
      .then([unsent('the webhook endpoint was removed', '')]);
    spec
      .given([claimed()])
      .when(start(0, endpoint({ enabled: false })))
      .then([unsent('the webhook endpoint is disabled')]);
    spec
      .given([claimed()])
      .when(start(0, endpoint({ secrets: [{ secret: 'whsec_old', expiresAt: at(0) }] })))
      .then([unsent('the webhook endpoint has no signing secret')]);
    spec
      .given([claimed(4, true)])
      .when(start(0, endpoint({ enabled: false })))
      .thenState((state) =>
        expect(state).toMatchObject({
          step: 'settled',
          status: 'failed',
          attempts: 5,
          manual: false,
          lastStatusCode: 0,
          lastError: 'the webhook endpoint is disabled',
        }),
      );
  });

  it('is refused without the lease, and a lease is worth one attempt', () => {
    spec.given([]).when(start(0)).thenFails('NOT_CLAIMED');
    spec
      .given([claimed(), started(1, 0)])
      .when(start(1))
      .thenFails('LEASE_USED');
    spec
      .given([claimed(), started(1, 0), recorded(1, http(500), { outcome: 'gave_up', reason: 'x' })])
      .when({ type: 'Defer', at: at(2), until: at(7), reason: 'registry away' })
      .thenFails('LEASE_USED');
  });
});

describe('the answer', () => {
  it('a 2xx delivers it and finishes it', () => {
    spec
      .given([claimed(1), started(2, 0)])
      .when(answered(http(204), 1))
      .then([{ ...recorded(2, http(204), { outcome: 'succeeded' }), startedAt: at(0) }]);
    spec
      .given([claimed(1), started(2, 0)])
      .when(answered(http(204), 1))
      .thenState((state) =>
        expect(state).toMatchObject({
          step: 'settled',
          status: 'delivered',
          attempts: 2,
          nextAttemptAt: null,
          finishedAt: at(1),
          lastStatusCode: 204,
          lastError: 'HTTP 204',
        }),
      );
  });

  it('a 500 retries after the delay of its attempt number, still pending', () => {
    const retry = { outcome: 'retryable', nextAttemptAt: afterSeconds(1, 300), reason: 'HTTP 500' } as const;
    spec
      .given([claimed(1), started(2, 0)])
      .when(answered(http(500), 1))
      .then([recorded(2, http(500), retry)]);
    spec
      .given([claimed(1), started(2, 0)])
      .when(answered(http(500), 1))
      .thenState((state) =>
        expect(state).toMatchObject({
          status: 'pending',
          attempts: 2,
          nextAttemptAt: afterSeconds(1, 300),
          finishedAt: null,
          lastStatusCode: 500,
          lastError: 'HTTP 500',
        }),
      );
  });

  it('a timeout waits at least the overload penalty; no answer at all counts status 0', () => {
    spec
      .given([claimed(), started(1, 0)])
      .when(answered({ kind: 'timeout' }, 1))
      .thenState((state) =>
        expect(state).toMatchObject({
          status: 'pending',
          nextAttemptAt: afterSeconds(1, 60),
          lastStatusCode: 0,
          lastError: 'timed out',
        }),
      );
  });

  it('410 Gone fails it at once: the endpoint is to be disabled', () => {
    spec
      .given([claimed(), started(1, 0)])
      .when(answered(http(410), 1))
      .then([recorded(1, http(410), { outcome: 'gone', reason: 'HTTP 410 Gone' })]);
  });

  it('after the last delay gives up', () => {
    const last = DEFAULT_POLICY.delaysSeconds.length;
    spec
      .given([claimed(last), started(last + 1, 0)])
      .when(answered(http(500), 1))
      .thenState((state) =>
        expect(state).toMatchObject({
          status: 'failed',
          attempts: last + 1,
          finishedAt: at(1),
          lastError: `HTTP 500; no retries left after ${last + 1} attempts`,
        }),
      );
  });

  it('of a manual attempt is never rescheduled, and clears the manual flag', () => {
    spec
      .given([claimed(8, true), started(9, 0)])
      .when(answered(http(503), 1))
      .thenState((state) =>
        expect(state).toMatchObject({
          status: 'failed',
          manual: false,
          nextAttemptAt: null,
          lastError: 'HTTP 503 (manual attempt, not retried)',
        }),
      );
  });

  it('is refused when no attempt is under way', () => {
    spec
      .given([claimed()])
      .when(answered(http(200), 1))
      .thenFails('NO_ATTEMPT_STARTED');
    spec
      .given([claimed(), started(1, 0), recorded(1, http(200), { outcome: 'succeeded' })])
      .when(answered(http(200), 2))
      .thenFails('NO_ATTEMPT_STARTED');
  });
});

describe('a deferral', () => {
  it('waits until the time given, counts no attempt and keeps a manual attempt manual', () => {
    const defer: DeliveryCommand = { type: 'Defer', at: at(0), until: at(5), reason: 'registry away' };
    spec
      .given([claimed(3, true)])
      .when(defer)
      .then([{ type: 'AttemptDeferred', at: at(0), until: at(5), reason: 'registry away' }]);
    spec
      .given([claimed(3, true)])
      .when(defer)
      .thenState((state) =>
        expect(state).toEqual({
          step: 'settled',
          status: 'pending',
          attempts: 3,
          manual: true,
          nextAttemptAt: at(5),
          finishedAt: null,
          lastStatusCode: null,
          lastError: null,
        }),
      );
  });

  it('is refused once the POST is out', () => {
    spec
      .given([claimed(), started(1, 0)])
      .when({ type: 'Defer', at: at(0), until: at(5), reason: 'registry away' })
      .thenFails('LEASE_USED');
  });
});

describe('what reached the endpoint', () => {
  it('an answer, a timeout or a broken connection did (the failure clock moves); a refusal before sending did not', () => {
    expect(reachedEndpoint(http(500))).toBe(true);
    expect(reachedEndpoint({ kind: 'timeout' })).toBe(true);
    expect(reachedEndpoint({ kind: 'network', error: cleanText('ECONNRESET', 100) })).toBe(true);
    expect(reachedEndpoint({ kind: 'blocked', error: cleanText('refused 10.0.0.1', 100) })).toBe(false);
    expect(reachedEndpoint({ kind: 'no_endpoint', error: 'the webhook endpoint is disabled' })).toBe(false);
  });
});
