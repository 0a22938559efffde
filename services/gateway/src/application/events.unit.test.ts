import { Messenger, type MessageEvent } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import { messageAccepted, messageCancelRequested, type Acceptance } from './events.js';

const acceptance: Acceptance = {
  requestId: '0b8e3f7a-9d1c-4a52-8f1e-2c3d4e5f6a7b',
  companyId: 'c1',
  apiKeyId: 'k1',
  idempotencyKey: '',
  at: new Date('2026-11-29T12:00:00Z'),
};
const body = { phone_number: '79123456789', text: 'Code 4711', service: 'telegram' as const };
const acceptedOf = (b: Parameters<typeof messageAccepted>[1]) => {
  const event = (messageAccepted(acceptance, b).record as MessageEvent).event;
  return event?.$case === 'messageAccepted' ? event.value : undefined;
};

describe('the accepted message event', () => {
  it('carries the moment it expires, its acceptance plus ttl_seconds', () => {
    expect(acceptedOf({ ...body, ttl_seconds: 300 })?.expiresAt).toEqual(new Date('2026-11-29T12:05:00Z'));
  });

  it('has no expiry without ttl_seconds', () => {
    expect(acceptedOf(body)?.expiresAt).toBeUndefined();
  });
});

describe('send_at and cancel', () => {
  it('carries send_at when it is after acceptance; a time before means now (none)', () => {
    expect(acceptedOf({ ...body, send_at: '2026-11-29T15:30:00+03:00' })?.sendAt).toEqual(
      new Date('2026-11-29T12:30:00Z'),
    );
    expect(acceptedOf({ ...body, send_at: '2026-11-29T11:59:59Z' })?.sendAt).toBeUndefined();
    expect(acceptedOf(body)?.sendAt).toBeUndefined();
  });

  it('writes a cancel on the message stream, keyed by the message (after its acceptance)', () => {
    const { idempotencyKey: _key, ...a } = acceptance;
    const out = messageCancelRequested({ ...a, eventId: 'e1' }, 'max');
    expect(out.key).toBe(acceptance.requestId);
    expect((out.record as MessageEvent).event).toEqual({
      $case: 'messageCancelRequested',
      value: { messenger: Messenger.MESSENGER_MAX, apiKeyId: 'k1' },
    });
  });
});

describe('fallback', () => {
  it("carries the route at the message's own channel, the fallback channels next and none tried", () => {
    expect(
      acceptedOf({
        ...body,
        bot_name: 'shop_bot',
        fallback: [{ service: 'max', bot_name: 'shop_max_bot' }, { service: 'telegram' }],
      })?.fallback,
    ).toEqual({
      channel: 0,
      current: { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop_bot' },
      next: [
        { messenger: Messenger.MESSENGER_MAX, botName: 'shop_max_bot' },
        { messenger: Messenger.MESSENGER_TELEGRAM, botName: '' },
      ],
      tried: [],
    });
  });

  it('has none without a fallback, or with an empty one', () => {
    expect(acceptedOf(body)?.fallback).toBeUndefined();
    expect(acceptedOf({ ...body, fallback: [] })?.fallback).toBeUndefined();
  });

  it('names the channel a cancel is for, and its messenger, when the message has a fallback', () => {
    const route = {
      channel: 1,
      current: { messenger: Messenger.MESSENGER_MAX, botName: '' },
      next: [],
      tried: [],
    };
    const cancelOf = (fallback?: typeof route) => {
      const event = (
        messageCancelRequested({ ...acceptance, eventId: 'e1' }, 'telegram', fallback).record as MessageEvent
      ).event;
      return event?.$case === 'messageCancelRequested' ? event.value : undefined;
    };
    expect(cancelOf(route)).toEqual({ messenger: Messenger.MESSENGER_MAX, apiKeyId: 'k1', fallback: route });
    expect(cancelOf()).toEqual({ messenger: Messenger.MESSENGER_TELEGRAM, apiKeyId: 'k1' });
  });
});
