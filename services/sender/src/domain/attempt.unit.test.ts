import { describe, expect, it } from 'vitest';
import { backoffMs, nextStep as decide, type NextStepFacts, type AttemptResult } from './attempt.js';
import { cleanAnswer } from './outside-text.js';

/** The step after an answer, cleaned as the shared mechanism cleans every answer. */
const nextStep = (result: AttemptResult, c: NextStepFacts) => decide(cleanAnswer(result), c);

const policy = { baseMs: 1_000, maxMs: 60_000 };
const at = (o: Partial<NextStepFacts> = {}): NextStepFacts => ({
  nowMs: 10_000,
  deadlineMs: 100_000,
  failures: 1,
  botFloods: 1,
  random: 0.5,
  policy,
  unconfirmed: 'fail',
  ...o,
});

describe('nextStep', () => {
  it('passes a sent message and a rejection straight through', () => {
    expect(nextStep({ kind: 'sent', providerMessageId: '7' }, at())).toEqual({
      kind: 'sent',
      providerMessageId: '7',
    });
    expect(
      nextStep(
        { kind: 'rejected', code: 'BOT_BLOCKED_BY_USER', description: 'd', unreachable: 'send-rejected' },
        at(),
      ),
    ).toEqual({
      kind: 'failed',
      code: 'BOT_BLOCKED_BY_USER',
      description: 'd',
      unreachable: 'send-rejected',
    });
  });

  it('fails a refused token as BOT_MISCONFIGURED', () => {
    expect(nextStep({ kind: 'unauthorized', description: 'Unauthorized' }, at())).toMatchObject({
      kind: 'failed',
      code: 'BOT_MISCONFIGURED',
    });
  });

  it('waits exactly retry_after and pauses the bot for as long', () => {
    expect(nextStep({ kind: 'rate-limited', retryAfterMs: 7_000, description: '' }, at())).toEqual({
      kind: 'retry',
      atMs: 17_000,
      pauseBotUntilMs: 17_000,
    });
  });

  it('backs off a flood without a hint more with every flood in a row', () => {
    const first = nextStep({ kind: 'rate-limited', description: '' }, at({ botFloods: 1 }));
    const third = nextStep({ kind: 'rate-limited', description: '' }, at({ botFloods: 3 }));
    expect(first).toMatchObject({ kind: 'retry', atMs: 10_500 });
    expect(third).toMatchObject({ kind: 'retry', atMs: 12_000 });
  });

  it('fails RATE_LIMITED_PAST_DEADLINE when the wait ends after the deadline', () => {
    expect(
      nextStep({ kind: 'rate-limited', retryAfterMs: 30_000, description: '' }, at({ deadlineMs: 20_000 })),
    ).toMatchObject({ kind: 'failed', code: 'RATE_LIMITED_PAST_DEADLINE' });
  });

  it('retries transient failures with backoff, and fails PROVIDER_ERROR past the deadline', () => {
    expect(nextStep({ kind: 'transient', description: '502' }, at({ failures: 2 }))).toEqual({
      kind: 'retry',
      atMs: 11_000,
    });
    expect(
      nextStep({ kind: 'transient', description: '502' }, at({ failures: 10, deadlineMs: 11_000 })),
    ).toMatchObject({
      kind: 'failed',
      code: 'PROVIDER_ERROR',
    });
  });

  it('never repeats a call that may have been delivered, unless told to prefer a duplicate to a loss', () => {
    const lost = { kind: 'unconfirmed', description: 'timed out after 15 s' } as const;
    expect(nextStep(lost, at())).toMatchObject({ kind: 'failed', code: 'DELIVERY_UNCONFIRMED' });
    expect(nextStep(lost, at({ unconfirmed: 'retry', failures: 2 }))).toEqual({
      kind: 'retry',
      atMs: 11_000,
    });
    expect(nextStep(lost, at({ unconfirmed: 'retry', failures: 10, deadlineMs: 11_000 }))).toMatchObject({
      kind: 'failed',
      code: 'PROVIDER_ERROR',
    });
  });
});

describe('backoffMs', () => {
  it('doubles its cap per failure up to the max, with full jitter above a tenth of the cap', () => {
    expect(backoffMs(1, policy, 0.999)).toBeCloseTo(999);
    expect(backoffMs(4, policy, 0.5)).toBe(4_000);
    expect(backoffMs(20, policy, 0.5)).toBe(30_000);
    expect(backoffMs(3, policy, 0)).toBe(400);
  });
});
