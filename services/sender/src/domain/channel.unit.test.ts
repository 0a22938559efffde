import { derivedEventId, FALLBACK_ERROR_CODES, Messenger } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import { attemptOf, channelEnd, journalKey } from './channel.js';

const MESSAGE = '0b6f7c1e-8a64-4c2a-9d51-3f1c2b7e9a10';
const telegram = { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop' };
const max = { messenger: Messenger.MESSENGER_MAX, botName: '' };
const first = { channel: 0, current: telegram, next: [max], tried: [] };

describe('a channel of a message', () => {
  it("keeps the message id as its own channel's journal key, and a key of its own for each fallback", () => {
    expect(journalKey(MESSAGE, undefined)).toBe(MESSAGE);
    expect(journalKey(MESSAGE, first)).toBe(MESSAGE);
    const second = journalKey(MESSAGE, { ...first, channel: 1 });
    expect(second).toBe(derivedEventId(MESSAGE, 'channel/1'));
    expect(second).not.toBe(journalKey(MESSAGE, { ...first, channel: 2 }));
  });

  it.each([...FALLBACK_ERROR_CODES])('passes the message on after %s while channels are left', (code) => {
    expect(channelEnd(first, code)).toEqual({ kind: 'next', route: first });
    expect(channelEnd({ ...first, next: [] }, code)).toEqual({
      kind: 'final',
      fallback: { ...first, next: [] },
    });
  });

  it.each([
    'DELIVERY_UNCONFIRMED',
    'EXPIRED',
    'CANCELED',
    'PROVIDER_ERROR',
    'RATE_LIMITED_PAST_DEADLINE',
    'INVALID_MESSAGE',
    'BOT_MISCONFIGURED',
    'UNKNOWN_BOT',
    'NO_DEFAULT_BOT',
    'CLIENT_FORGOTTEN',
  ])('ends the message with %s, naming the channel that decided it', (code) => {
    expect(channelEnd(first, code)).toEqual({ kind: 'final', fallback: { ...first, next: [] } });
  });

  it('ends the message after any failure that follows a call which may have reached the person', () => {
    expect(channelEnd(first, 'BOT_BLOCKED_BY_USER', true)).toEqual({
      kind: 'final',
      fallback: { ...first, next: [] },
    });
  });

  it('ends a sent message, and a message without a fallback names no channel', () => {
    expect(channelEnd(first, undefined)).toEqual({ kind: 'final', fallback: { ...first, next: [] } });
    expect(channelEnd(undefined, 'CLIENT_NOT_FOUND')).toEqual({ kind: 'final', fallback: undefined });
  });

  it('names a failed channel as the next one lists it among those tried', () => {
    const failedAt = new Date(0);
    const failure = { botId: 'b1', errorCode: 'CLIENT_NOT_FOUND', errorDescription: 'no', failedAt };
    expect(attemptOf(first, failure)).toEqual({
      messenger: Messenger.MESSENGER_TELEGRAM,
      botName: 'shop',
      ...failure,
    });
  });
});
