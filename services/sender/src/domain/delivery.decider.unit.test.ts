import { describe, expect, it } from 'vitest';
import { messageErrorCodes } from '@mds/contracts';
import { deciderSpec } from '@mds/eventsourcing';
import { cleanAnswer } from './outside-text.js';
import type { AttemptResult } from './attempt.js';
import { deliveryDecider, type DeliveryCommand, type DeliveryEvent, type RowFacts } from './delivery.js';

// Given-when-then over one message's delivery in a sender (@mds/eventsourcing): what each fact of its turn
// (a claim's answer, the messenger's answer, a journal write) leads to, without a journal or a provider.
const spec = deciderSpec(deliveryDecider, expect);
const policy = { baseMs: 1_000, maxMs: 60_000 };
const DEADLINE = 100_000;
const arrived: DeliveryEvent = { type: 'Arrived', deadlineMs: DEADLINE };
const claimed = (attempts = 1): DeliveryEvent => ({ type: 'Claimed', attempts });
const row = (o: Partial<RowFacts>): RowFacts => ({
  status: 'pending',
  seq: 7n,
  attempts: 0,
  failures: 0,
  notBeforeMs: 0,
  claimedByUs: false,
  claimAbandoned: false,
  ...o,
});
const claimAnswer = (
  answer: Extract<DeliveryCommand, { type: 'RecordClaim' }>['answer'],
  nowMs = 10_000,
): DeliveryCommand => ({
  type: 'RecordClaim',
  answer,
  nowMs,
  recheckMs: 5_000,
});
const answer = (result: AttemptResult, o: { botFloods?: number; unconfirmed?: 'fail' | 'retry' } = {}) =>
  ({
    type: 'RecordAnswer',
    result: cleanAnswer(result),
    nowMs: 10_000,
    botFloods: o.botFloods ?? 0,
    random: 0.5,
    policy,
    unconfirmed: o.unconfirmed ?? 'fail',
  }) satisfies DeliveryCommand;
const written = (ok: boolean, found?: RowFacts): DeliveryCommand => ({
  type: 'RecordWrite',
  written: ok,
  ...(found ? { row: found } : {}),
  nowMs: 20_000,
  recheckMs: 5_000,
});

describe('a delivery: claims', () => {
  it('is claimed for its first call, and a lost claim answer is still ours if the row says so', () => {
    spec
      .given([arrived])
      .when(claimAnswer({ kind: 'claimed', attempts: 1 }))
      .then([claimed(1)]);
    const ours = row({ status: 'sending', attempts: 1, claimedByUs: true });
    spec
      .given([arrived, { type: 'ClaimUnanswered' }])
      .when(claimAnswer({ kind: 'row', row: ours }))
      .thenState((s) => expect(s).toMatchObject({ status: 'claimed', attempts: 1, claimUncertain: false }));
    // Without a lost answer, our own claim is a call still running (a lane of before a rebalance): watched.
    spec
      .given([arrived])
      .when(claimAnswer({ kind: 'row', row: ours }))
      .then([{ type: 'Watched', notBeforeMs: 15_000 }]);
  });

  it('adopts what a row found at claim time says: decided, parked, or claimed by another', () => {
    spec
      .given([arrived])
      .when(claimAnswer({ kind: 'row', row: row({ status: 'sent' }) }))
      .then([{ type: 'AlreadyDecided' }]);
    spec
      .given([arrived])
      .when(claimAnswer({ kind: 'row', row: row({ status: 'pending', failures: 2, notBeforeMs: 12_000 }) }))
      .then([{ type: 'Parked', seq: 7n, failures: 2, notBeforeMs: 12_000 }]);
    spec
      .given([arrived])
      .when(claimAnswer({ kind: 'row', row: row({ status: 'sending', claimAbandoned: true }) }))
      .then([{ type: 'Watched', notBeforeMs: 0 }]);
    // Another replica wrote its row this very moment: looked at again a little later.
    spec
      .given([arrived])
      .when(claimAnswer({ kind: 'none' }))
      .then([{ type: 'Watched', notBeforeMs: 15_000 }]);
  });

  it('loses a parked message whose claim fails: the lane reads the journal again later', () => {
    const loaded: DeliveryEvent = {
      type: 'Loaded',
      deadlineMs: DEADLINE,
      seq: 3n,
      failures: 1,
      notBeforeMs: 0,
      watched: false,
    };
    spec
      .given([loaded])
      .when(claimAnswer({ kind: 'none' }))
      .then([{ type: 'ClaimLost' }]);
    spec
      .given([loaded])
      .when(claimAnswer({ kind: 'row', row: row({ status: 'sent' }) }))
      .thenState((s) => expect(s.status).toBe('lost'));
  });

  it('loads a row claimed by a process that may be gone as watched, rechecked later unless abandoned', () => {
    const load = (claimAbandoned: boolean): DeliveryCommand => ({
      type: 'Load',
      row: row({ status: 'sending', claimAbandoned }),
      deadlineMs: DEADLINE,
      nowMs: 10_000,
      recheckMs: 5_000,
    });
    spec
      .given([])
      .when(load(false))
      .thenState((s) =>
        expect(s).toMatchObject({ status: 'watched', parked: true, seq: 7n, notBeforeMs: 15_000 }),
      );
    spec
      .given([])
      .when(load(true))
      .thenState((s) => expect(s).toMatchObject({ status: 'watched', notBeforeMs: 0 }));
  });
});

describe('a delivery: answers', () => {
  it('decides a sent message, with the attempt number of its claim', () => {
    spec
      .given([arrived, claimed(2)])
      .when(answer({ kind: 'sent', providerMessageId: '42' }))
      .then([
        {
          type: 'Decided',
          decided: { kind: 'sent', providerMessageId: '42' },
          attempts: 2,
          atMs: 10_000,
          abandonedClaim: false,
        },
      ]);
  });

  it('gives a transient failure back for a retry, counting it and keeping its error', () => {
    spec
      .given([arrived, claimed()])
      .when(answer({ kind: 'transient', description: '502 Bad Gateway' }))
      .thenState((s) =>
        expect(s).toMatchObject({
          failures: 1,
          lastError: '502 Bad Gateway',
          // The first failure backs off up to the base (full jitter: half of it here).
          due: { kind: 'give-back', atMs: 10_500, failed: true },
        }),
      );
  });

  it('pauses the bot on flood control, without counting a failure', () => {
    spec
      .given([arrived, claimed()])
      .when(answer({ kind: 'rate-limited', retryAfterMs: 3_000, description: 'Too Many Requests' }))
      .then([{ type: 'RetryPlanned', atMs: 13_000, failed: false, pauseBotUntilMs: 13_000 }]);
  });

  it('fails a call that may have reached the person, or retries it if told so', () => {
    const unconfirmed = { kind: 'unconfirmed', description: 'socket hang up' } as const;
    spec
      .given([arrived, claimed()])
      .when(answer(unconfirmed))
      .thenState((s) =>
        expect(s.due).toMatchObject({ kind: 'store', decided: { code: 'DELIVERY_UNCONFIRMED' } }),
      );
    spec
      .given([arrived, claimed()])
      .when(answer(unconfirmed, { unconfirmed: 'retry' }))
      .thenState((s) => expect(s).toMatchObject({ failures: 1, due: { kind: 'give-back', failed: true } }));
  });

  it('refuses an answer for a message it has not claimed', () => {
    spec
      .given([arrived])
      .when(answer({ kind: 'sent', providerMessageId: '1' }))
      .thenFails('WRONG_STATUS');
  });
});

describe('a delivery: deadlines, orphans, interruptions', () => {
  it('fails a message whose deadline passed while it waited, saying why', () => {
    const expire: DeliveryCommand = { type: 'Expire', nowMs: 200_000 };
    const codeOf = (past: DeliveryEvent[]) => {
      let description = '';
      spec
        .given([arrived, ...past, claimed()])
        .when(expire)
        .thenState((s) => {
          expect(s.due?.kind).toBe('store');
          if (s.due?.kind === 'store' && s.due.decided.kind === 'failed')
            description = `${s.due.decided.code}: ${s.due.decided.description}`;
        });
      return description;
    };
    expect(codeOf([])).toMatch(/^RATE_LIMITED_PAST_DEADLINE: the message waited for its turn/);
    const lookup: DeliveryEvent = { type: 'CredentialsUnavailable', error: 'registry down', notBeforeMs: 0 };
    expect(codeOf([lookup])).toMatch(
      /^PROVIDER_ERROR: the bot's credentials could not be read.*registry down$/,
    );
    const failure: DeliveryEvent = { type: 'RetryPlanned', atMs: 0, failed: true, error: '502' };
    expect(codeOf([claimed(), failure, { type: 'GivenBack', atMs: 0 }])).toMatch(
      /^PROVIDER_ERROR: the messenger kept failing.*last error: 502$/,
    );
  });

  it('waits out a credentials lookup that failed, backing off as after a second failure', () => {
    spec
      .given([arrived])
      .when({ type: 'NoteCredentialsUnavailable', error: 'UNAVAILABLE', nowMs: 10_000, random: 0.5, policy })
      .then([{ type: 'CredentialsUnavailable', error: 'UNAVAILABLE', notBeforeMs: 11_000 }]);
  });

  it('fails an abandoned claim as unconfirmed, on the abandoned claim, never as a call of its own', () => {
    spec
      .given([arrived, { type: 'Watched', notBeforeMs: 0 }])
      .when({ type: 'CheckOrphan', nowMs: 30_000 })
      .thenState((s) =>
        expect(s.due).toMatchObject({
          kind: 'store',
          attempts: 0,
          abandonedClaim: true,
          decided: { kind: 'failed', code: 'DELIVERY_UNCONFIRMED' },
        }),
      );
    spec.given([arrived, claimed()]).when({ type: 'CheckOrphan', nowMs: 30_000 }).thenFails('WRONG_STATUS');
  });

  it('keeps a write due until the journal answers: an interrupted turn is finished by the next', () => {
    const decided: DeliveryEvent = {
      type: 'Decided',
      decided: { kind: 'sent', providerMessageId: '9' },
      attempts: 1,
      atMs: 10_000,
      abandonedClaim: false,
    };
    spec
      .given([arrived, claimed(), decided])
      .when({ type: 'Interrupt', nowMs: 11_000 })
      .thenState((s) =>
        expect(s).toMatchObject({ notBeforeMs: 12_000, due: { kind: 'store', atMs: 10_000 } }),
      );
    spec
      .given([arrived, claimed(), decided, { type: 'Interrupted', notBeforeMs: 12_000 }])
      .when(written(true))
      .then([{ type: 'OutcomeStored' }]);
    // Another owner took the claim over and decided it: its outcome is the one.
    spec
      .given([arrived, claimed(), decided])
      .when(written(false, row({ status: 'failed' })))
      .then([{ type: 'AlreadyDecided' }]);
    spec
      .given([arrived, claimed(), decided])
      .when(written(false))
      .then([{ type: 'Dropped' }]);
    spec.given([arrived]).when(written(true)).thenFails('NOTHING_DUE');
  });

  it('parks a message given back, and notes a claim whose answer was lost', () => {
    const retry: DeliveryEvent = { type: 'RetryPlanned', atMs: 15_000, failed: true, error: '502' };
    spec
      .given([arrived, claimed(), retry])
      .when(written(true))
      .thenState((s) => {
        expect(s).toMatchObject({ status: 'open', parked: true, notBeforeMs: 15_000, failures: 1 });
        expect(s.due).toBeUndefined();
      });
    spec
      .given([arrived, claimed(), retry])
      .when(written(false))
      .then([{ type: 'Dropped' }]);
    spec
      .given([arrived])
      .when({ type: 'Interrupt', nowMs: 1 })
      .thenState((s) => expect(s.claimUncertain).toBe(false));
    spec
      .given([arrived])
      .when({ type: 'NoteClaimUnanswered' })
      .thenState((s) => expect(s.claimUncertain).toBe(true));
  });
});

it('the decider starts unread and a message from the log starts open, in no journal row', () => {
  spec
    .given([])
    .when({ type: 'Arrive', deadlineMs: DEADLINE })
    .thenState((s) =>
      expect(s).toEqual({
        status: 'open',
        deadlineMs: DEADLINE,
        notBeforeMs: 0,
        parked: false,
        failures: 0,
        claimUncertain: false,
        attempts: 0,
      }),
    );
});

describe('a delivery: expiry (ttl_seconds)', () => {
  const EXPIRES = 50_000;
  const expiring: DeliveryEvent = { type: 'Arrived', deadlineMs: EXPIRES, expiresAtMs: EXPIRES };
  const failure = (o: Record<string, unknown> = {}): unknown =>
    expect.objectContaining({ kind: 'store', decided: expect.objectContaining({ code: 'EXPIRED', ...o }) });

  it('works to its expiry when that comes before the delivery deadline, and to the deadline otherwise', () => {
    spec.given([]).when({ type: 'Arrive', deadlineMs: DEADLINE, expiresAtMs: EXPIRES }).then([expiring]);
    spec
      .given([])
      .when({ type: 'Arrive', deadlineMs: DEADLINE, expiresAtMs: DEADLINE + 1 })
      .thenState((s) => expect(s).toMatchObject({ deadlineMs: DEADLINE, expiresAtMs: DEADLINE + 1 }));
    spec
      .given([])
      .when({
        type: 'Load',
        row: row({}),
        deadlineMs: DEADLINE,
        expiresAtMs: EXPIRES,
        nowMs: 0,
        recheckMs: 1,
      })
      .thenState((s) =>
        expect(s).toMatchObject({ status: 'open', deadlineMs: EXPIRES, expiresAtMs: EXPIRES }),
      );
  });

  it('fails EXPIRED once its expiry passed while it waited, whatever kept it waiting', () => {
    const expire: DeliveryCommand = { type: 'Expire', nowMs: EXPIRES + 1 };
    // Its turn behind the bot's backlog.
    spec
      .given([expiring, claimed()])
      .when(expire)
      .thenState((s) => expect(s.due).toEqual(failure({ description: messageErrorCodes.EXPIRED })));
    // A retry wait after a failure, or a registry that could not give the bot's credentials.
    const failed: DeliveryEvent = { type: 'RetryPlanned', atMs: 0, failed: true, error: '502' };
    spec
      .given([expiring, claimed(), failed, { type: 'GivenBack', atMs: 0 }, claimed(2)])
      .when(expire)
      .thenState((s) =>
        expect(s.due).toEqual(failure({ description: expect.stringMatching(/last error: 502$/) })),
      );
    const lookup: DeliveryEvent = { type: 'CredentialsUnavailable', error: 'registry down', notBeforeMs: 0 };
    spec
      .given([expiring, lookup, claimed()])
      .when(expire)
      .thenState((s) => expect(s.due).toEqual(failure()));
    // Its usual deadline before a later expiry: as without one.
    spec
      .given([{ type: 'Arrived', deadlineMs: DEADLINE, expiresAtMs: DEADLINE + 1 }, claimed()])
      .when({ type: 'Expire', nowMs: DEADLINE + 1 })
      .thenState((s) => expect(s.due).toMatchObject({ decided: { code: 'RATE_LIMITED_PAST_DEADLINE' } }));
  });

  it('makes no call once a claim comes back after its expiry (a restart, a slow journal)', () => {
    spec
      .given([expiring])
      .when(claimAnswer({ kind: 'claimed', attempts: 1 }, EXPIRES))
      .then([
        claimed(1),
        {
          type: 'Decided',
          decided: { kind: 'failed', code: 'EXPIRED', description: messageErrorCodes.EXPIRED },
          attempts: 1,
          atMs: EXPIRES,
          abandonedClaim: false,
        },
      ]);
    // Before its expiry the claim is a call like any other.
    spec
      .given([expiring])
      .when(claimAnswer({ kind: 'claimed', attempts: 1 }, EXPIRES - 1))
      .then([claimed(1)]);
  });

  it('fails EXPIRED, not RATE_LIMITED_PAST_DEADLINE or PROVIDER_ERROR, when a retry would come after it', () => {
    spec
      .given([expiring, claimed()])
      .when(answer({ kind: 'rate-limited', retryAfterMs: 60_000, description: 'Too Many Requests' }))
      .thenState((s) =>
        expect(s.due).toEqual(failure({ description: expect.stringMatching(/Too Many Requests$/) })),
      );
    const soon: DeliveryEvent = { type: 'Arrived', deadlineMs: 10_100, expiresAtMs: 10_100 };
    spec
      .given([soon, claimed()])
      .when(answer({ kind: 'transient', description: '502 Bad Gateway' }))
      .thenState((s) => expect(s.due).toEqual(failure()));
    // Still a retry when it fits before the expiry.
    spec
      .given([expiring, claimed()])
      .when(answer({ kind: 'rate-limited', retryAfterMs: 3_000, description: 'Too Many Requests' }))
      .then([{ type: 'RetryPlanned', atMs: 13_000, failed: false, pauseBotUntilMs: 13_000 }]);
  });
});

describe('a delivery: send_at and cancel', () => {
  it('leaves a message read again to its scheduled row (held until its send_at): parked, no call', () => {
    spec
      .given([arrived])
      .when(claimAnswer({ kind: 'row', row: row({ status: 'scheduled', notBeforeMs: 90_000 }) }))
      .then([{ type: 'Parked', seq: 7n, failures: 0, notBeforeMs: 90_000 }]);
  });

  it('makes no call for a message canceled before its claim: the canceled outcome is the one', () => {
    spec
      .given([arrived])
      .when(claimAnswer({ kind: 'row', row: row({ status: 'failed' }) }))
      .then([{ type: 'AlreadyDecided' }]);
  });
});
