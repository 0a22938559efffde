import { messageErrorCodes, type CleanText, type MessageErrorCode } from '@mds/contracts';
import type { AttemptResult, Unreachable } from '@mds/messengers';

/** What one provider call came to (@mds/messengers): decided on only once cleaned (outside-text.ts, `CleanText`). */
export type { AttemptResult, Unreachable };

export interface RetryPolicy {
  /** First backoff after a transient failure. */
  baseMs: number;
  /** Backoffs never grow past this. */
  maxMs: number;
}

/** What to do with a message after an attempt. */
export type NextStep =
  | { kind: 'sent'; providerMessageId: string }
  | { kind: 'failed'; code: MessageErrorCode; description: string; unreachable?: Unreachable }
  | { kind: 'retry'; atMs: number; pauseBotUntilMs?: number };

/**
 * "Full jitter" exponential backoff (AWS architecture blog): a uniform pick in [0, min(max, base*2^n)),
 * never below a tenth of the cap so retries do not hammer a failing provider. `random` is in [0, 1).
 */
export function backoffMs(failures: number, policy: RetryPolicy, random: number): number {
  const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, failures - 1));
  return Math.max(cap / 10, cap * random);
}

/** What the retry rules weigh besides the answer itself. */
export interface NextStepFacts {
  nowMs: number;
  deadlineMs: number;
  /** The deadline is the message's expiry (ttl_seconds): a retry past it ends the message EXPIRED. */
  expiryBinds?: boolean;
  /** Failed attempts of this message so far, this one included. */
  failures: number;
  /** Consecutive flood answers of this bot (MAX gives no retry hint: back off the bot as a whole). */
  botFloods: number;
  random: number;
  policy: RetryPolicy;
  /**
   * What a call that may have been delivered leads to: `fail` (the default: DELIVERY_UNCONFIRMED, never a
   * duplicate) or `retry` (like a transient failure: never a loss, now and then a duplicate).
   */
  unconfirmed: 'fail' | 'retry';
}

/** A retry that could only come after the message's expiry: it is never sent, so it ends EXPIRED now. */
const expiredBefore = (retryAtMs: number, lastError: string): NextStep => ({
  kind: 'failed',
  code: 'EXPIRED',
  description: `${messageErrorCodes.EXPIRED}: its next try (at ${new Date(retryAtMs).toISOString()}) would come after it; last error: ${lastError}`,
});

/** The one place deciding retry versus failure: pure, so every branch is tested without a provider. */
export function nextStep(result: AttemptResult<CleanText>, c: NextStepFacts): NextStep {
  switch (result.kind) {
    case 'sent':
      return result;
    case 'rejected':
      return {
        kind: 'failed',
        code: result.code,
        description: result.description,
        ...(result.unreachable ? { unreachable: result.unreachable } : {}),
      };
    case 'unauthorized':
      return { kind: 'failed', code: 'BOT_MISCONFIGURED', description: result.description };
    case 'rate-limited': {
      const waitMs = result.retryAfterMs ?? backoffMs(c.botFloods, c.policy, c.random);
      const atMs = c.nowMs + waitMs;
      if (atMs > c.deadlineMs) {
        if (c.expiryBinds) return expiredBefore(atMs, result.description);
        return {
          kind: 'failed',
          code: 'RATE_LIMITED_PAST_DEADLINE',
          description: `the messenger asked to wait ${Math.ceil(waitMs / 1000)} s, past the delivery deadline (${result.description})`,
        };
      }
      return { kind: 'retry', atMs, pauseBotUntilMs: atMs };
    }
    case 'unconfirmed':
    case 'transient': {
      if (result.kind === 'unconfirmed' && c.unconfirmed === 'fail')
        return {
          kind: 'failed',
          code: 'DELIVERY_UNCONFIRMED',
          description: `the messenger did not answer after taking the request (${result.description}); it may have reached the person and is not sent again, to avoid a duplicate`,
        };
      // Otherwise retried like any transient failure.
      const atMs = c.nowMs + backoffMs(c.failures, c.policy, c.random);
      if (atMs > c.deadlineMs) {
        if (c.expiryBinds) return expiredBefore(atMs, result.description);
        return {
          kind: 'failed',
          code: 'PROVIDER_ERROR',
          description: `the messenger kept failing until the delivery deadline; last error: ${result.description}`,
        };
      }
      return { kind: 'retry', atMs };
    }
  }
}
