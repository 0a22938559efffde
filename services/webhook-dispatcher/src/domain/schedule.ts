/**
 * When a webhook is tried again, and when it is given up: a Svix-like schedule with jitter, 410 disabling the
 * endpoint, Retry-After honoured on 429 and 503, a penalty after a timeout or 429. Pure: time and randomness
 * arrive as arguments.
 */
import type { CleanText } from '@mds/contracts';

export interface RetryPolicy {
  /** Seconds to wait after attempt 1, 2, ...; the first attempt is immediate. Attempts = length + 1. */
  delaysSeconds: readonly number[];
  /** Each wait is scaled by a random factor in [1 - jitter, 1 + jitter]. */
  jitter: number;
  /** After a timeout or a 429, the next wait is at least this long. */
  overloadPenaltySeconds: number;
  /** A receiver's Retry-After is honoured up to this long. */
  maxRetryAfterSeconds: number;
}

/** Immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (about 27 h 35 min in all). */
export const DEFAULT_DELAYS_SECONDS = [5, 300, 1_800, 7_200, 18_000, 36_000, 36_000] as const;

export const DEFAULT_POLICY: RetryPolicy = {
  delaysSeconds: DEFAULT_DELAYS_SECONDS,
  jitter: 0.2,
  overloadPenaltySeconds: 60,
  maxRetryAfterSeconds: 36_000,
};

/** What one attempt came to. */
export type AttemptResult =
  | {
      kind: 'response';
      status: number;
      /** Seconds, from a Retry-After header. */
      retryAfterSeconds?: number;
      /** The Svix receiver control header `webhook-delivery`. */
      deliveryControl?: string;
    }
  | { kind: 'timeout' }
  /** The connection failed; its error's words may quote the endpoint, so they come cleaned. */
  | { kind: 'network'; error: CleanText }
  /** Refused before connecting: the address is not one we deliver to (SSRF protection). */
  | { kind: 'blocked'; error: CleanText }
  /** Nothing was sent: the company has no endpoint, or it is disabled. */
  | { kind: 'no_endpoint'; error: string };

export type AttemptDecision =
  | { outcome: 'succeeded' }
  | { outcome: 'retryable'; nextAttemptAt: Date; reason: string }
  /** The endpoint asked to be disabled (410 Gone, or `webhook-delivery: disable`). */
  | { outcome: 'gone'; reason: string }
  | { outcome: 'gave_up'; reason: string };

export function describeResult(result: AttemptResult): string {
  switch (result.kind) {
    case 'response':
      return `HTTP ${result.status}`;
    case 'timeout':
      return 'timed out';
    default:
      return result.error;
  }
}

/**
 * What follows attempt number `attempt` (1-based). A manual attempt (resend, recover) is never rescheduled:
 * it either succeeds or leaves the delivery failed, as it was.
 */
export function decideAfterAttempt(o: {
  attempt: number;
  manual: boolean;
  result: AttemptResult;
  now: Date;
  /** A number in [0, 1). */
  random: number;
  policy: RetryPolicy;
}): AttemptDecision {
  const { result, policy } = o;
  if (result.kind === 'response' && result.status >= 200 && result.status < 300)
    return { outcome: 'succeeded' };
  const reason = describeResult(result);
  if (result.kind === 'response' && (result.status === 410 || result.deliveryControl === 'disable')) {
    return {
      outcome: 'gone',
      reason: result.status === 410 ? 'HTTP 410 Gone' : `${reason}, webhook-delivery: disable`,
    };
  }
  if (result.kind === 'blocked' || result.kind === 'no_endpoint') return { outcome: 'gave_up', reason };
  if (result.kind === 'response' && result.deliveryControl === 'abort-message') {
    return { outcome: 'gave_up', reason: `${reason}, webhook-delivery: abort-message` };
  }
  if (o.manual) return { outcome: 'gave_up', reason: `${reason} (manual attempt, not retried)` };
  const base = policy.delaysSeconds[o.attempt - 1];
  if (base === undefined)
    return { outcome: 'gave_up', reason: `${reason}; no retries left after ${o.attempt} attempts` };
  let seconds = base * (1 + policy.jitter * (2 * o.random - 1));
  const overloaded = result.kind === 'timeout' || (result.kind === 'response' && result.status === 429);
  if (overloaded) seconds = Math.max(seconds, policy.overloadPenaltySeconds);
  if (
    result.kind === 'response' &&
    (result.status === 429 || result.status === 503) &&
    result.retryAfterSeconds !== undefined
  ) {
    seconds = Math.max(seconds, Math.min(result.retryAfterSeconds, policy.maxRetryAfterSeconds));
  }
  return {
    outcome: 'retryable',
    nextAttemptAt: new Date(o.now.getTime() + Math.round(seconds * 1000)),
    reason,
  };
}

/** Retry-After as seconds from now: delay-seconds or an HTTP-date (RFC 9110 §10.2.3); undefined if neither. */
export function parseRetryAfter(value: string | undefined, now: Date): number | undefined {
  if (value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}

/** "5,300,1800" -> [5, 300, 1800]; throws on anything but non-negative numbers. */
export function parseSchedule(value: string): number[] {
  const delays = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map(Number);
  if (delays.length === 0 || delays.some((d) => !Number.isFinite(d) || d < 0)) {
    throw new Error('a comma-separated list of non-negative seconds, e.g. "5,300,1800"');
  }
  return delays;
}

/**
 * The endpoint's failure clock: it starts at the first failure after a success and stops at any success.
 * An endpoint failing for `disableAfterMs` is disabled (Svix: 5 days).
 */
export function failingSinceAfter(
  failingSince: Date | undefined,
  succeeded: boolean,
  at: Date,
): Date | undefined {
  if (succeeded) return undefined;
  return failingSince ?? at;
}

export function shouldDisableEndpoint(
  failingSince: Date | undefined,
  at: Date,
  disableAfterMs: number,
): boolean {
  return failingSince !== undefined && at.getTime() - failingSince.getTime() >= disableAfterMs;
}
