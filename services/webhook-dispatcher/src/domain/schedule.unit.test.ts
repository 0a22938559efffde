import { cleanText } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_POLICY,
  decideAfterAttempt,
  failingSinceAfter,
  parseRetryAfter,
  parseSchedule,
  shouldDisableEndpoint,
  type AttemptResult,
} from './schedule.js';

const now = new Date('2026-11-21T12:00:00.000Z');
const after = (result: AttemptResult, attempt = 1, random = 0.5, manual = false) =>
  decideAfterAttempt({ attempt, manual, result, now, random, policy: DEFAULT_POLICY });
const waitOf = (d: ReturnType<typeof after>) =>
  d.outcome === 'retryable' ? (d.nextAttemptAt.getTime() - now.getTime()) / 1000 : undefined;
const status = (
  s: number,
  extra: Partial<Extract<AttemptResult, { kind: 'response' }>> = {},
): AttemptResult => ({
  kind: 'response',
  status: s,
  ...extra,
});

describe('the retry schedule', () => {
  it('follows immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h without jitter, then gives up', () => {
    const waits = [1, 2, 3, 4, 5, 6, 7].map((attempt) => waitOf(after(status(500), attempt)));
    expect(waits).toEqual([5, 300, 1_800, 7_200, 18_000, 36_000, 36_000]);
    expect(after(status(500), 8)).toEqual({
      outcome: 'gave_up',
      reason: 'HTTP 500; no retries left after 8 attempts',
    });
  });

  it('spreads each wait by ±20 % with the random number', () => {
    expect(waitOf(after(status(500), 2, 0))).toBe(240);
    expect(waitOf(after(status(500), 2, 0.999999))).toBeCloseTo(360, 0);
  });

  it('counts only 2xx as success; 3xx and 4xx are retried', () => {
    expect(after(status(200)).outcome).toBe('succeeded');
    expect(after(status(204)).outcome).toBe('succeeded');
    for (const s of [301, 302, 400, 404, 500]) expect(after(status(s)).outcome).toBe('retryable');
  });

  it('treats 410 and webhook-delivery: disable as gone, abort-message as given up', () => {
    expect(after(status(410))).toEqual({ outcome: 'gone', reason: 'HTTP 410 Gone' });
    expect(after(status(400, { deliveryControl: 'disable' })).outcome).toBe('gone');
    expect(after(status(400, { deliveryControl: 'abort-message' })).outcome).toBe('gave_up');
  });

  it('waits at least a minute after a timeout or a 429, and honours Retry-After on 429 and 503', () => {
    expect(waitOf(after({ kind: 'timeout' }))).toBe(60);
    expect(waitOf(after(status(429)))).toBe(60);
    expect(waitOf(after(status(429, { retryAfterSeconds: 120 })))).toBe(120);
    expect(waitOf(after(status(503, { retryAfterSeconds: 900 })))).toBe(900);
    // Retry-After on other statuses is not ours to follow; a shorter one never shortens the schedule.
    expect(waitOf(after(status(500, { retryAfterSeconds: 900 })))).toBe(5);
    expect(waitOf(after(status(503, { retryAfterSeconds: 1 }), 3))).toBe(1_800);
    // Bounded by the longest step of the schedule.
    expect(waitOf(after(status(503, { retryAfterSeconds: 10 ** 9 })))).toBe(36_000);
  });

  it('gives up at once on a refused address or a missing endpoint, and never reschedules a manual attempt', () => {
    expect(after({ kind: 'blocked', error: cleanText('refused 10.0.0.1', 100) }).outcome).toBe('gave_up');
    expect(after({ kind: 'no_endpoint', error: 'the webhook endpoint is disabled' }).outcome).toBe('gave_up');
    expect(after(status(500), 1, 0.5, true)).toEqual({
      outcome: 'gave_up',
      reason: 'HTTP 500 (manual attempt, not retried)',
    });
    expect(after(status(200), 9, 0.5, true).outcome).toBe('succeeded');
  });
});

describe('Retry-After and the schedule setting', () => {
  it('reads delay-seconds and HTTP dates, and nothing else', () => {
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('Sat, 21 Nov 2026 12:02:00 GMT', now)).toBe(120);
    expect(parseRetryAfter('Sat, 21 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('parses a schedule and refuses nonsense', () => {
    expect(parseSchedule(' 1, 2 ,3 ')).toEqual([1, 2, 3]);
    expect(() => parseSchedule('1,x')).toThrow(/non-negative seconds/);
    expect(() => parseSchedule('')).toThrow();
    expect(() => parseSchedule('-1')).toThrow();
  });
});

describe('the failure clock of an endpoint', () => {
  it('starts at the first failure, is cleared by a success, and disables after the set time', () => {
    const t0 = new Date('2026-11-01T00:00:00Z');
    const t1 = new Date('2026-11-03T00:00:00Z');
    const fiveDays = 5 * 24 * 3_600_000;
    const since = failingSinceAfter(undefined, false, t0);
    expect(since).toEqual(t0);
    expect(failingSinceAfter(since, false, t1)).toEqual(t0);
    expect(failingSinceAfter(since, true, t1)).toBeUndefined();
    expect(shouldDisableEndpoint(since, t1, fiveDays)).toBe(false);
    expect(shouldDisableEndpoint(since, new Date(t0.getTime() + fiveDays), fiveDays)).toBe(true);
    expect(shouldDisableEndpoint(undefined, t1, fiveDays)).toBe(false);
  });
});
