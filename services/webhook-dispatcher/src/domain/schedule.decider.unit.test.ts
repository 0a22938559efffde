import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@mds/eventsourcing';
import {
  DEFAULT_POLICY,
  deliverySchedule,
  type AttemptRecorded,
  type AttemptResult,
  type RecordAttempt,
} from './schedule.js';

// Given-when-then over one delivery's schedule (@mds/eventsourcing): past attempts in, the next one out.
const spec = deciderSpec(deliverySchedule, expect);
const at = (second: number) => new Date(Date.UTC(2026, 10, 24, 12, 0, second));
const record = (result: AttemptResult, second: number, manual = false): RecordAttempt => ({
  type: 'RecordAttempt',
  manual,
  result,
  now: at(second),
  random: 0.5,
  policy: DEFAULT_POLICY,
});
const failed500 = (attempt: number, second: number): AttemptRecorded => ({
  type: 'AttemptRecorded',
  attempt,
  at: at(second),
  decision: {
    outcome: 'retryable',
    nextAttemptAt: new Date(at(second).getTime() + DEFAULT_POLICY.delaysSeconds[attempt - 1]! * 1000),
    reason: 'HTTP 500',
  },
});

describe('a delivery schedule', () => {
  it('retries a first failure after the first delay, and waits for it', () => {
    spec
      .given([])
      .when(record({ kind: 'response', status: 500 }, 0))
      .then([failed500(1, 0)]);
    spec
      .given([])
      .when(record({ kind: 'response', status: 500 }, 0))
      .thenState((state) =>
        expect(state).toEqual({
          status: 'pending',
          attempts: 1,
          nextAttemptAt: new Date(at(0).getTime() + 5_000),
          finishedAt: null,
        }),
      );
  });

  it('counts the attempts before: the second failure waits the second delay', () => {
    spec
      .given([failed500(1, 0)])
      .when(record({ kind: 'response', status: 500 }, 5))
      .then([failed500(2, 5)]);
  });

  it('is delivered, and finished, on a 2xx', () => {
    spec
      .given([failed500(1, 0)])
      .when(record({ kind: 'response', status: 204 }, 5))
      .thenState((state) =>
        expect(state).toEqual({ status: 'delivered', attempts: 2, nextAttemptAt: null, finishedAt: at(5) }),
      );
  });

  it('fails at once on 410 Gone, and a manual attempt that fails is not retried', () => {
    spec
      .given([])
      .when(record({ kind: 'response', status: 410 }, 0))
      .then([
        {
          type: 'AttemptRecorded',
          attempt: 1,
          at: at(0),
          decision: { outcome: 'gone', reason: 'HTTP 410 Gone' },
        },
      ]);
    spec
      .given([failed500(1, 0)])
      .when(record({ kind: 'timeout' }, 9, true))
      .thenState((state) =>
        expect(state).toEqual({ status: 'failed', attempts: 2, nextAttemptAt: null, finishedAt: at(9) }),
      );
  });

  it('gives up after the last delay', () => {
    const past = DEFAULT_POLICY.delaysSeconds.map((_, i) => failed500(i + 1, i));
    spec
      .given(past)
      .when(record({ kind: 'response', status: 500 }, 30))
      .then([
        {
          type: 'AttemptRecorded',
          attempt: past.length + 1,
          at: at(30),
          decision: {
            outcome: 'gave_up',
            reason: `HTTP 500; no retries left after ${past.length + 1} attempts`,
          },
        },
      ]);
  });
});
