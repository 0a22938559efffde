import { describe, expect, it } from 'vitest';
import { act, person, T0, telegramBot, testWorld } from '../../../test/world.js';
import { RateLimiter } from '../rate-limit.js';
import type { TelegramResult } from './errors.js';
import type { TgMessage } from './objects.js';
import { sendMessage } from './send-message.js';

function setup(limits = { bot: { ratePerS: 30, burst: 30 }, chat: { ratePerS: 1, burst: 3 } }) {
  const t = testWorld();
  const bot = telegramBot(t.world);
  const ivan = person(t.world);
  act(t.world, ivan, bot, { type: 'start' });
  const ctx = { world: t.world, limiter: new RateLimiter(true), limits };
  const send = (params: Record<string, unknown>) => sendMessage(ctx, bot, params);
  return { ...t, bot, ivan, send };
}

const description = (r: TelegramResult<unknown>) => (r.ok ? 'ok' : `${r.error_code} ${r.description}`);
const link = (url: string) => ({ inline_keyboard: [[{ text: 'Open', url }]] });

describe('sendMessage validation (in the Bot API order)', () => {
  it.each([
    ['no chat_id', { text: 'hi' }, '400 Bad Request: chat_id is empty'],
    ['empty chat_id', { chat_id: '', text: 'hi' }, '400 Bad Request: chat_id is empty'],
    ['no text', { chat_id: 1 }, '400 Bad Request: message text is empty'],
    ['blank text', { chat_id: 1, text: '   ' }, '400 Bad Request: message text is empty'],
    ['4097 characters', { chat_id: 1, text: 'x'.repeat(4097) }, '400 Bad Request: message is too long'],
    [
      'too long wins over a bad URL',
      { chat_id: 1, text: 'x'.repeat(4097), reply_markup: link('ftp://x') },
      '400 Bad Request: message is too long',
    ],
    [
      'unknown parse_mode',
      { chat_id: 1, text: 'hi', parse_mode: 'Plain' },
      '400 Bad Request: unsupported parse_mode',
    ],
    [
      'reply_markup not JSON',
      { chat_id: 1, text: 'hi', reply_markup: '{not json' },
      "400 Bad Request: can't parse reply keyboard markup JSON object",
    ],
    [
      'reply_markup of no known kind',
      { chat_id: 1, text: 'hi', reply_markup: { foo: 1 } },
      "400 Bad Request: can't parse reply keyboard markup JSON object",
    ],
    [
      'row not an array',
      {
        chat_id: 1,
        text: 'hi',
        reply_markup: { inline_keyboard: [{ text: 'a', url: 'https://a.example' }] },
      },
      '400 Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup should be an Array of Arrays',
    ],
    [
      'button not an object',
      { chat_id: 1, text: 'hi', reply_markup: { inline_keyboard: [['Open']] } },
      "400 Bad Request: can't parse inline keyboard button: InlineKeyboardButton should be an Object",
    ],
    [
      'button without action',
      { chat_id: 1, text: 'hi', reply_markup: { inline_keyboard: [[{ text: 'Open' }]] } },
      "400 Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard",
    ],
    [
      'url not a string',
      { chat_id: 1, text: 'hi', reply_markup: { inline_keyboard: [[{ text: 'Open', url: 5 }]] } },
      '400 Bad Request: can\'t parse inline keyboard button: Field "url" must be of type String',
    ],
    [
      'javascript: URL',
      { chat_id: 1, text: 'hi', reply_markup: link('javascript:alert(1)') },
      '400 Bad Request: BUTTON_URL_INVALID',
    ],
    [
      'URL without scheme',
      { chat_id: 1, text: 'hi', reply_markup: link('example.com/page') },
      '400 Bad Request: BUTTON_URL_INVALID',
    ],
    [
      'URL without host',
      { chat_id: 1, text: 'hi', reply_markup: link('https://') },
      '400 Bad Request: BUTTON_URL_INVALID',
    ],
    [
      'callback_data over 64 bytes',
      {
        chat_id: 1,
        text: 'hi',
        reply_markup: { inline_keyboard: [[{ text: 'x', callback_data: 'y'.repeat(65) }]] },
      },
      '400 Bad Request: BUTTON_DATA_INVALID',
    ],
    [
      '101 buttons',
      {
        chat_id: 1,
        text: 'hi',
        reply_markup: {
          inline_keyboard: Array.from({ length: 101 }, () => [{ text: 'a', url: 'https://a.example' }]),
        },
      },
      '400 Bad Request: reply markup is too long',
    ],
  ])('%s', (_label, params, expected) => {
    const { send } = setup();
    expect(description(send(params))).toBe(expected);
  });

  it('accepts exactly 4096 characters, http, https and tg links, and parse modes in any case', () => {
    const { send, ivan } = setup({ bot: { ratePerS: 100, burst: 100 }, chat: { ratePerS: 100, burst: 100 } });
    const chat_id = ivan.telegramUserId;
    expect(description(send({ chat_id, text: 'x'.repeat(4096) }))).toBe('ok');
    for (const url of ['http://a.example/x?y=1', 'https://a.example', 'tg://resolve?domain=x']) {
      expect(
        description(send({ chat_id: String(chat_id), text: 'hi', reply_markup: JSON.stringify(link(url)) })),
      ).toBe('ok');
    }
    for (const parse_mode of ['HTML', 'html', 'MarkdownV2', 'Markdown', '']) {
      expect(description(send({ chat_id, text: '<b>hi</b>', parse_mode }))).toBe('ok');
    }
  });
});

describe('sendMessage recipients', () => {
  it('answers per recipient state: unknown, never started, blocked, deactivated', () => {
    const { world, bot, ivan, send } = setup({
      bot: { ratePerS: 1000, burst: 1000 },
      chat: { ratePerS: 1000, burst: 1000 },
    });
    const stranger = person(world, '79990001122', 'Olga');
    expect(description(send({ chat_id: 999, text: 'hi' }))).toBe('400 Bad Request: chat not found');
    expect(description(send({ chat_id: '@ivan', text: 'hi' }))).toBe('400 Bad Request: chat not found');
    expect(description(send({ chat_id: stranger.telegramUserId, text: 'hi' }))).toBe(
      "403 Forbidden: bot can't initiate conversation with a user",
    );
    act(world, ivan, bot, { type: 'block' });
    expect(description(send({ chat_id: ivan.telegramUserId, text: 'hi' }))).toBe(
      '403 Forbidden: bot was blocked by the user',
    );
    world.deactivate(ivan);
    expect(description(send({ chat_id: ivan.telegramUserId, text: 'hi' }))).toBe(
      '403 Forbidden: user is deactivated',
    );
  });

  it('returns the sent Message and records it, with its link buttons, in the chat', () => {
    const { bot, ivan, send } = setup();
    const result = send({
      chat_id: ivan.telegramUserId,
      text: 'Your order',
      reply_markup: link('https://shop.example/o/1'),
    });
    expect(result).toEqual({
      ok: true,
      result: {
        message_id: 2,
        from: { id: bot.id, is_bot: true, first_name: 'Shop', username: 'shop_bot' },
        chat: { id: ivan.telegramUserId, type: 'private', first_name: 'Ivan' },
        date: Math.floor(T0 / 1000),
        text: 'Your order',
        reply_markup: link('https://shop.example/o/1'),
      },
    } satisfies TelegramResult<TgMessage>);
    const last = ivan.chats.get(bot.id)!.transcript.at(-1)!;
    expect(last).toMatchObject({
      from: 'bot',
      messageId: 2,
      text: 'Your order',
      buttons: [[{ text: 'Open', url: 'https://shop.example/o/1' }]],
    });
  });

  it('keeps a request_contact reply keyboard on the chat until it is removed, and never echoes it', () => {
    const { bot, ivan, send } = setup();
    const chat = ivan.chats.get(bot.id)!;
    const keyboard = {
      keyboard: [[{ text: 'Share phone', request_contact: true }]],
      one_time_keyboard: true,
    };
    const shown = send({ chat_id: ivan.telegramUserId, text: 'Share your phone', reply_markup: keyboard });
    expect(shown.ok && 'reply_markup' in shown.result).toBe(false);
    expect(chat.replyKeyboard).toEqual([[{ text: 'Share phone', kind: 'request_contact' }]]);
    send({ chat_id: ivan.telegramUserId, text: 'Thanks', reply_markup: { remove_keyboard: true } });
    expect(chat.replyKeyboard).toBeUndefined();
  });
});

describe('sendMessage flood control', () => {
  it('allows a short burst per chat, then 429 with retry_after in whole seconds; other chats go on', () => {
    const { world, bot, ivan, send, advance } = setup();
    const olga = person(world, '79990001122', 'Olga');
    act(world, olga, bot, { type: 'start' });
    const toIvan = () => description(send({ chat_id: ivan.telegramUserId, text: 'hi' }));
    expect([toIvan(), toIvan(), toIvan()]).toEqual(['ok', 'ok', 'ok']);
    const refused = send({ chat_id: ivan.telegramUserId, text: 'hi' });
    expect(refused).toEqual({
      ok: false,
      error_code: 429,
      description: 'Too Many Requests: retry after 1',
      parameters: { retry_after: 1 },
    });
    expect(description(send({ chat_id: olga.telegramUserId, text: 'hi' }))).toBe('ok');
    advance(1000);
    expect(toIvan()).toBe('ok');
  });

  it('counts flood control before recipient checks, so a blocked chat is throttled too', () => {
    const { world, bot, ivan, send } = setup({
      bot: { ratePerS: 30, burst: 30 },
      chat: { ratePerS: 0.2, burst: 1 },
    });
    act(world, ivan, bot, { type: 'block' });
    expect(description(send({ chat_id: ivan.telegramUserId, text: 'a' }))).toBe(
      '403 Forbidden: bot was blocked by the user',
    );
    expect(description(send({ chat_id: ivan.telegramUserId, text: 'b' }))).toBe(
      '429 Too Many Requests: retry after 5',
    );
  });
});
