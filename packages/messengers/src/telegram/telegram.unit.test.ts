import { describe, expect, it } from 'vitest';
import type { Update } from 'grammy/types';
import { classifySendFailure } from './classify.js';
import { factsOfUpdate, nextOffset } from './updates.js';

describe('classifySendFailure', () => {
  it.each([
    [
      403,
      'Forbidden: bot was blocked by the user',
      { kind: 'rejected', code: 'BOT_BLOCKED_BY_USER', unreachable: 'send-rejected' },
    ],
    [
      403,
      'Forbidden: user is deactivated',
      { kind: 'rejected', code: 'USER_DEACTIVATED', unreachable: 'deactivated' },
    ],
    [
      403,
      "Forbidden: bot can't initiate conversation with a user",
      { kind: 'rejected', code: 'CLIENT_NOT_LINKED_TO_BOT' },
    ],
    [400, 'Bad Request: chat not found', { kind: 'rejected', code: 'CHAT_NOT_FOUND' }],
    [400, 'Bad Request: message is too long', { kind: 'rejected', code: 'INVALID_MESSAGE' }],
    [400, 'Bad Request: BUTTON_URL_INVALID', { kind: 'rejected', code: 'INVALID_MESSAGE' }],
    [401, 'Unauthorized', { kind: 'unauthorized' }],
    [404, 'Not Found', { kind: 'unauthorized' }],
    [500, 'Internal Server Error', { kind: 'transient' }],
    [502, 'Bad Gateway', { kind: 'transient' }],
  ])('%i %s', (code, description, expected) => {
    expect(classifySendFailure({ error_code: code, description })).toMatchObject(expected);
  });

  it('a 429 carries retry_after in milliseconds', () => {
    expect(
      classifySendFailure({
        error_code: 429,
        description: 'Too Many Requests: retry after 7',
        parameters: { retry_after: 7 },
      }),
    ).toEqual({ kind: 'rate-limited', retryAfterMs: 7_000, description: 'Too Many Requests: retry after 7' });
  });
});

const from = { id: 42, is_bot: false, first_name: 'Ann' };
const chat = { id: 42, type: 'private' as const, first_name: 'Ann' };
const message = (extra: object): Update => ({
  update_id: 10,
  message: { message_id: 1, date: 0, chat, from, ...extra },
});

describe('factsOfUpdate', () => {
  it('reads /start with or without a payload or a bot name', () => {
    for (const text of ['/start', '/start abc', '/start@acme_bot'])
      expect(factsOfUpdate(message({ text }))).toEqual([
        { kind: 'started', chatId: '42', userId: '42', updateId: '10' },
      ]);
    expect(factsOfUpdate(message({ text: '/starter' }))).toEqual([]);
    expect(factsOfUpdate(message({ text: 'hello' }))).toEqual([]);
  });

  it('takes the person’s own contact, normalised, and ignores anyone else’s', () => {
    expect(
      factsOfUpdate(
        message({ contact: { phone_number: '+7 912 345-67-89', first_name: 'Ann', user_id: 42 } }),
      ),
    ).toEqual([{ kind: 'contact-shared', chatId: '42', userId: '42', updateId: '10', phone: '79123456789' }]);
    expect(
      factsOfUpdate(message({ contact: { phone_number: '79123456789', first_name: 'Bob', user_id: 43 } })),
    ).toEqual([]);
    expect(factsOfUpdate(message({ contact: { phone_number: '79123456789', first_name: 'Bob' } }))).toEqual(
      [],
    );
  });

  it('reads blocking and unblocking from my_chat_member', () => {
    const change = (old: string, now: string): Update =>
      ({
        update_id: 11,
        my_chat_member: {
          chat,
          from,
          date: 0,
          old_chat_member: { status: old, user: from },
          new_chat_member: { status: now, user: from, until_date: 0 },
        },
      }) as unknown as Update;
    expect(factsOfUpdate(change('member', 'kicked'))).toEqual([
      { kind: 'blocked', chatId: '42', userId: '42', updateId: '11', reason: 'blocked' },
    ]);
    expect(factsOfUpdate(change('kicked', 'member'))).toEqual([
      { kind: 'unblocked', chatId: '42', userId: '42', updateId: '11' },
    ]);
  });

  it('confirms every update read: offset = highest update_id + 1', () => {
    expect(nextOffset([{ update_id: 5 }, { update_id: 9 }] as Update[], '3')).toBe('10');
    expect(nextOffset([], '3')).toBe('3');
  });
});
