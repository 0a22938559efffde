import { Messenger, type ChannelAttempt, type FallbackRoute } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import { streamOf } from '../../test/events.js';
import { fromRow, toRow, type StateRow } from './row.js';
import { evolve, fallbackRouteOf, foldInto, foldState, isoTime, type EventState } from './state.js';
import { percentile, summarize } from './summary.js';

describe('message state', () => {
  it('is new once accepted, with the messenger and bot asked for', () => {
    const m = streamOf();
    const accepted = m.accepted(0, { botName: 'shop', messenger: Messenger.MESSENGER_MAX });
    expect(foldState([accepted])).toEqual({
      eventId: m.id,
      kind: 'message',
      companyId: 'company-1',
      status: 'new',
      acceptedAt: '2026-01-01T12:00:00.000Z',
      finishedAt: null,
      updatedAt: '2026-01-01T12:00:00.000Z',
      errorCode: null,
      errorDescription: null,
      messenger: 'max',
      botName: 'shop',
      botId: null,
      attempts: null,
      result: null,
      metadata: null,
      fallback: null,
      history: [
        { type: 'MessageAccepted', at: '2026-01-01T12:00:00.000Z', eventId: accepted.metadata.eventId },
      ],
    });
  });

  it("keeps the request's metadata: in plain text, or sealed when its seal says it holds some", () => {
    const m = streamOf();
    const plain = m.accepted(0, { requestMetadata: { entries: { order_id: '42' } } });
    expect(foldState([plain, m.sent(1)])!.metadata).toEqual({ values: { order_id: '42' } });
    expect(foldState([m.accepted(0, { requestMetadata: { entries: {} } })])!.metadata).toBeNull();
    const seal = { subjectId: 's', keyId: 'k', nonce: Buffer.from([1]), ciphertext: Buffer.from([2]) };
    const sealedWith = (hasRequestMetadata: boolean): typeof plain => {
      const accepted = m.accepted(0);
      if (accepted.event.$case !== 'messageAccepted') throw new Error('unreachable');
      return {
        ...accepted,
        event: {
          ...accepted.event,
          value: { ...accepted.event.value, sealed: { ...seal, hasRequestMetadata } },
        },
      };
    };
    expect(foldState([sealedWith(true)])!.metadata).toEqual({
      values: {},
      sealed: { subjectId: 's', keyId: 'k', nonce: 'AQ==', ciphertext: 'Ag==', hasRequestMetadata: true },
    });
    expect(foldState([sealedWith(false)])!.metadata).toBeNull();
  });

  it('is sent at the time the messenger took it, through the bot that sent it', () => {
    const m = streamOf();
    const state = foldState([m.accepted(0), m.sent(5, 3)])!;
    expect(state).toMatchObject({
      status: 'sent',
      finishedAt: '2026-01-01T12:00:03.000Z',
      updatedAt: '2026-01-01T12:00:05.000Z',
      botId: 'bot-1',
      attempts: 1,
      errorCode: null,
      botName: null,
    });
    expect(state.history.map((h) => h.type)).toEqual(['MessageAccepted', 'MessageSent']);
  });

  it('is failed with the error code and description', () => {
    const m = streamOf();
    expect(foldState([m.accepted(0), m.failed(2, 'BOT_BLOCKED_BY_USER')])).toMatchObject({
      status: 'failed',
      finishedAt: '2026-01-01T12:00:02.000Z',
      errorCode: 'BOT_BLOCKED_BY_USER',
      errorDescription: 'because BOT_BLOCKED_BY_USER',
    });
  });

  it('ignores an event it has already applied (same event id)', () => {
    const m = streamOf();
    const accepted = m.accepted();
    const sent = m.sent();
    const once = foldState([accepted, sent])!;
    const twice = foldState([accepted, accepted, sent, sent, accepted])!;
    expect(twice).toEqual(once);
    expect(evolve(once, sent)).toBe(once);
  });

  it('keeps the first outcome: nothing leaves sent or failed', () => {
    const m = streamOf();
    const failed = m.failed(2);
    const state = foldState([m.accepted(0), failed, m.sent(3)])!;
    expect(state).toMatchObject({ status: 'failed', finishedAt: '2026-01-01T12:00:02.000Z', botId: null });
    expect(state.history.map((h) => h.type)).toEqual([
      'MessageAccepted',
      'MessageDeliveryFailed',
      'MessageSent',
    ]);
  });

  it('takes an outcome that comes before its acceptance (a replay started between them)', () => {
    const m = streamOf();
    const state = foldState([m.sent(2), m.accepted(0)])!;
    expect(state).toMatchObject({
      status: 'sent',
      acceptedAt: '2026-01-01T12:00:00.000Z',
      updatedAt: '2026-01-01T12:00:02.000Z',
      messenger: 'telegram',
    });
  });

  it('folds many streams by their public id', () => {
    const a = streamOf();
    const b = streamOf();
    const states = foldInto(new Map(), [a.accepted(), b.accepted(), a.sent(), b.failed()]);
    expect(states.get(a.id)?.status).toBe('sent');
    expect(states.get(b.id)?.status).toBe('failed');
  });
});

describe('isoTime', () => {
  it('formats every date exactly as toISOString does, in and out of its fast range', () => {
    const times = [
      0, 1, 999, 1_000, 59_999, 1_767_225_600_000, 1_767_225_600_001, 1_767_225_600_999, 1_767_225_601_000,
      1_767_225_600_500, 951_782_400_000, 253_402_300_799_999, 253_402_300_800_000, -1, -1_000,
      -62_198_755_200_000,
    ];
    for (const ms of times) expect(isoTime(new Date(ms))).toBe(new Date(ms).toISOString());
    // Back and forth across seconds: the reused second never leaks into another one.
    for (let ms = 1_767_225_598_000; ms < 1_767_225_603_000; ms += 337) {
      expect(isoTime(new Date(ms))).toBe(new Date(ms).toISOString());
      expect(isoTime(new Date(ms - 5_000))).toBe(new Date(ms - 5_000).toISOString());
    }
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError);
  });
});

describe('request results', () => {
  it('change_phone: new, then changed with the links moved', () => {
    const r = streamOf();
    expect(foldState([r.phoneChangeRequested()])).toMatchObject({
      kind: 'change_phone',
      status: 'new',
      result: { oldPhone: '79123456789', newPhone: '79876543210', linksMoved: null },
    });
    expect(foldState([r.phoneChangeRequested(), r.phoneChanged(4)])).toMatchObject({
      status: 'changed',
      finishedAt: '2026-01-01T12:00:04.000Z',
      result: { linksMoved: 2 },
    });
  });

  it('change_phone: rejected with the error code', () => {
    const r = streamOf();
    expect(foldState([r.phoneChangeRequested(), r.phoneChangeRejected()])).toMatchObject({
      status: 'rejected',
      errorCode: 'OLD_PHONE_NOT_FOUND',
      errorDescription: 'no such client',
    });
  });

  it('client_check: new, then checked with the bots that reach the client', () => {
    const r = streamOf();
    expect(foldState([r.checkRequested()])).toMatchObject({
      kind: 'client_check',
      status: 'new',
      result: { phoneNumber: '79123456789', exists: null, bots: [] },
    });
    const checked = foldState([r.checkRequested(), r.checked()]);
    expect(checked).toMatchObject({
      status: 'checked',
      result: { exists: true, bots: [{ messenger: 'max', botName: 'shop', reachable: true }] },
    });
    // The result outlives a late copy of the request event.
    expect(foldState([r.checked(), r.checkRequested()])?.result).toEqual(checked?.result);
  });
});

describe('projection row', () => {
  // What PostgreSQL gives back for a written row: jsonb parsed, timestamps as Dates.
  const read = (state: EventState): StateRow => {
    const row = toRow(state);
    return {
      ...row,
      result: row.result === null ? null : (JSON.parse(row.result) as StateRow['result']),
      history: JSON.parse(row.history) as StateRow['history'],
      metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as StateRow['metadata']),
    };
  };

  it('maps a state to a row and back without loss', () => {
    const m = streamOf();
    const r = streamOf();
    for (const state of [
      foldState([m.accepted()])!,
      foldState([m.accepted(0, { requestMetadata: { entries: { order_id: '42' } } })])!,
      foldState([m.accepted(), m.failed()])!,
      foldState([r.checkRequested(), r.checked()])!,
      foldState([r.phoneChangeRequested(), r.phoneChanged()])!,
    ])
      expect(fromRow(read(state))).toEqual(state);
  });

  it('folding on from a stored row gives what folding everything at once gives', () => {
    const m = streamOf();
    const events = [m.accepted(0), m.sent(1)];
    const stored = fromRow(read(foldState([events[0]!])!));
    expect(evolve(stored, events[1]!)).toEqual(foldState(events));
  });
});

describe('summary', () => {
  it('counts messages by state, error code, messenger and bot, and times accepted to sent', () => {
    const states = [
      foldState([streamOf().accepted(0)]),
      foldState([streamOf().sent(1)]),
      ...[1, 2, 3, 4].map((s) => {
        const m = streamOf();
        return foldState([m.accepted(0, { botName: 'shop' }), m.sent(s + 1, s)]);
      }),
      (() => {
        const m = streamOf();
        return foldState([m.accepted(0, { messenger: Messenger.MESSENGER_MAX }), m.failed(1)]);
      })(),
      (() => {
        const r = streamOf();
        return foldState([r.checkRequested(), r.checked()]);
      })(),
    ].filter((s): s is EventState => s !== undefined);
    const summary = summarize(states);
    expect(summary.messages.byState).toEqual({ new: 1, sent: 5, failed: 1 });
    expect(summary.messages.byErrorCode).toEqual({ CLIENT_NOT_FOUND: 1 });
    expect(summary.messages.byMessenger).toEqual({ telegram: 5, max: 1, '(unknown)': 1 });
    expect(summary.messages.byBot).toEqual({
      'telegram/(default)': 1,
      '(unknown)/(default)': 1,
      'telegram/shop': 4,
      'max/(default)': 1,
    });
    expect(summary.messages.acceptedToSentMs).toEqual({
      count: 4,
      p50: 2000,
      p90: 4000,
      p99: 4000,
      max: 4000,
    });
    expect(summary.requests).toEqual({ 'client_check/checked': 1 });
  });

  it('nearest-rank percentiles', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 99)).toBe(99);
    expect(percentile(values, 100)).toBe(100);
    expect(percentile([7], 1)).toBe(7);
  });
});

describe('a message with a fallback', () => {
  const telegram = { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop_bot' };
  const max = { messenger: Messenger.MESSENGER_MAX, botName: '' };
  const maxResolved = { messenger: Messenger.MESSENGER_MAX, botName: 'shop_max_bot' };
  const accepted: FallbackRoute = { channel: 0, current: telegram, next: [max], tried: [] };
  const attempt: ChannelAttempt = {
    ...telegram,
    botId: 'bot-1',
    errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
    errorDescription: 'not linked',
    failedAt: new Date(Date.UTC(2026, 0, 1, 12, 0, 1)),
  };
  const decided: FallbackRoute = { channel: 1, current: maxResolved, next: [], tried: [attempt] };

  it('is at its own channel once accepted, at the next once a channel could not reach the person', () => {
    const m = streamOf();
    const state = foldState([m.accepted(0, { botName: 'shop_bot', fallback: accepted })])!;
    expect(fallbackRouteOf(state)).toEqual(accepted);
    const on = foldState([
      m.accepted(0, { botName: 'shop_bot', fallback: accepted }),
      m.attemptFailed(1, accepted, attempt),
    ])!;
    expect(on.status).toBe('new');
    expect(fallbackRouteOf(on)).toEqual({ channel: 1, current: max, next: [], tried: [attempt] });
    expect(on.history.map((h) => h.type)).toEqual(['MessageAccepted', 'MessageAttemptFailed']);
    // As the row keeps it.
    expect(fromRow({ ...toRow(on), fallback: on.fallback } as unknown as StateRow).fallback).toEqual(
      on.fallback,
    );
  });

  it('names the channel that decided it once ended, and an attempt read late changes nothing', () => {
    const m = streamOf();
    const events = [
      m.accepted(0, { fallback: accepted }),
      m.attemptFailed(1, accepted, attempt),
      m.sent(2, 2, decided),
    ];
    expect(fallbackRouteOf(foldState(events)!)).toEqual(decided);
    // A replay that reads the outcome before the acceptance and the attempt keeps the outcome's route.
    expect(fallbackRouteOf(foldState([events[2]!, events[0]!, events[1]!])!)).toEqual(decided);
    const failed = foldState([
      m.accepted(0, { fallback: accepted }),
      m.failed(2, 'CLIENT_NOT_FOUND', decided),
    ])!;
    expect([failed.status, fallbackRouteOf(failed)]).toEqual(['failed', decided]);
  });

  it('has none without a fallback: the state is as it was', () => {
    const m = streamOf();
    expect(foldState([m.accepted(0), m.sent(1)])!.fallback).toBeNull();
  });
});
