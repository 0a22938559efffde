import { describe, expect, it } from 'vitest';
import { act, maxBot, person, T0, testWorld } from '../../../test/world.js';
import { isMaxError, type MaxResult } from './errors.js';
import { sendMessage } from './send-message.js';

function setup() {
  const t = testWorld();
  const bot = maxBot(t.world);
  const ivan = person(t.world);
  act(t.world, ivan, bot, { type: 'start' });
  const send = (query: Record<string, string>, body: unknown) => sendMessage(t.world, bot, query, body);
  return { ...t, bot, ivan, send };
}

const outcome = (r: MaxResult<unknown>) =>
  isMaxError(r) ? `${r.status} ${r.body.code} ${r.body.message}` : 'ok';
const keyboard = (...rows: unknown[][]) => [{ type: 'inline_keyboard', payload: { buttons: rows } }];
const link = (url = 'https://shop.example', text = 'Open') => ({ type: 'link', text, url });

describe('POST /messages validation', () => {
  it.each([
    [
      'text over 4000',
      { text: 'x'.repeat(4001) },
      "400 proto.payload Field 'text' size (4001) must be at most 4000",
    ],
    [
      'ftp link',
      { text: 'hi', attachments: keyboard([link('ftp://shop.example')]) },
      '400 proto.payload Must have only http/https links format in buttons',
    ],
    [
      'tg link',
      { text: 'hi', attachments: keyboard([link('tg://resolve')]) },
      '400 proto.payload Must have only http/https links format in buttons',
    ],
    [
      'url over 2048',
      { text: 'hi', attachments: keyboard([link(`https://a.example/${'p'.repeat(2040)}`)]) },
      "400 proto.payload Field 'url' size (2058) must be at most 2048",
    ],
    [
      'empty button text',
      { text: 'hi', attachments: keyboard([link('https://a.example', '')]) },
      "400 proto.payload Field 'text' size (0) must be at least 1",
    ],
    [
      'button text over 128',
      { text: 'hi', attachments: keyboard([link('https://a.example', 't'.repeat(129))]) },
      "400 proto.payload Field 'text' size (129) must be at most 128",
    ],
    [
      '4 links in a row',
      { text: 'hi', attachments: keyboard([link(), link(), link(), link()]) },
      '400 proto.payload Row 0 has 4 link, open_app, request_contact or request_geo_location buttons, must be at most 3',
    ],
    [
      '8 buttons in a row',
      {
        text: 'hi',
        attachments: keyboard(
          Array.from({ length: 8 }, () => ({ type: 'callback', text: 'c', payload: 'p' })),
        ),
      },
      '400 proto.payload Row 0 has 8 buttons, must be at most 7',
    ],
    [
      '31 rows',
      { text: 'hi', attachments: keyboard(...Array.from({ length: 31 }, () => [link()])) },
      "400 proto.payload Field 'buttons' size (31) must be at most 30",
    ],
    [
      '240 buttons',
      {
        text: 'hi',
        attachments: keyboard(
          ...Array.from({ length: 30 }, () =>
            Array.from({ length: 8 }, () => ({ type: 'callback', text: 'c', payload: 'p' })),
          ),
        ),
      },
      '400 proto.payload Keyboard has 240 buttons, must be at most 210',
    ],
    [
      'unknown button type',
      { text: 'hi', attachments: keyboard([{ type: 'teleport', text: 'x' }]) },
      '400 proto.payload Unknown button type: teleport',
    ],
    [
      'media attachment',
      { text: 'hi', attachments: [{ type: 'image', payload: { token: 't' } }] },
      "400 proto.payload Attachment type 'image' is not supported by the simulator",
    ],
    [
      'unknown format',
      { text: 'hi', format: 'bbcode' },
      "400 proto.payload Field 'format' value (bbcode) must be one of: markdown, html",
    ],
    ['no text, no attachments', { text: '' }, '400 proto.payload Message must have text or attachments'],
    ['body not an object', 'not an object', '400 proto.payload Request body must be a JSON object'],
  ])('%s', (_label, body, expected) => {
    const { send, ivan } = setup();
    expect(outcome(send({ user_id: String(ivan.maxUserId) }, body))).toBe(expected);
  });

  it('accepts 4000 characters and three link buttons a row', () => {
    const { send, ivan } = setup();
    expect(outcome(send({ user_id: String(ivan.maxUserId) }, { text: 'x'.repeat(4000) }))).toBe('ok');
    expect(
      outcome(
        send(
          { user_id: String(ivan.maxUserId) },
          { text: 'hi', attachments: keyboard([link(), link(), link()]) },
        ),
      ),
    ).toBe('ok');
  });
});

describe('POST /messages recipients', () => {
  it('takes the recipient from the query only, by user_id or by the dialog chat_id', () => {
    const { send, ivan, bot } = setup();
    const chatId = ivan.chats.get(bot.id)!.chatId;
    expect(outcome(send({}, { text: 'hi', user_id: ivan.maxUserId }))).toBe(
      '400 proto.payload Either chat_id or user_id must be specified',
    );
    expect(outcome(send({ user_id: 'abc' }, { text: 'hi' }))).toBe(
      "400 proto.payload Field 'user_id' value (abc) must be a number",
    );
    expect(outcome(send({ chat_id: String(chatId) }, { text: 'hi' }))).toBe('ok');
    expect(outcome(send({ chat_id: String(ivan.maxUserId) }, { text: 'hi' }))).toBe(
      `404 chat.not.found Chat ${ivan.maxUserId} not found`,
    );
  });

  it('answers chat.denied for a stopped dialog, a person who never started the bot, or a deleted account', () => {
    const { world, send, ivan, bot } = setup();
    const stranger = person(world, '79990001122', 'Olga');
    expect(outcome(send({ user_id: '123' }, { text: 'hi' }))).toBe('404 chat.not.found Chat 123 not found');
    expect(outcome(send({ user_id: String(stranger.maxUserId) }, { text: 'hi' }))).toBe(
      '403 chat.denied error.dialog.suspended',
    );
    act(world, ivan, bot, { type: 'stop' });
    expect(outcome(send({ user_id: String(ivan.maxUserId) }, { text: 'hi' }))).toBe(
      '403 chat.denied error.dialog.suspended',
    );
    act(world, ivan, bot, { type: 'start' });
    world.deactivate(ivan);
    expect(outcome(send({ user_id: String(ivan.maxUserId) }, { text: 'hi' }))).toBe(
      '403 chat.denied error.dialog.suspended',
    );
  });

  it('returns {message} with the dialog recipient, a mid, the text and attachments, and records it', () => {
    const { send, ivan, bot } = setup();
    const attachments = keyboard([link('https://shop.example/o/1')]);
    const result = send(
      { user_id: String(ivan.maxUserId) },
      { text: 'Your order', attachments, notify: true },
    );
    const chatId = ivan.chats.get(bot.id)!.chatId;
    expect(result).toEqual({
      status: 200,
      body: {
        message: {
          sender: {
            user_id: bot.id,
            first_name: 'Shop',
            name: 'Shop',
            username: 'shop',
            is_bot: true,
            last_activity_time: T0,
          },
          recipient: { chat_id: chatId, chat_type: 'dialog', user_id: ivan.maxUserId },
          timestamp: T0,
          body: {
            mid: expect.stringMatching(/^mid\.[0-9a-f]{32}$/) as string,
            seq: 1,
            text: 'Your order',
            attachments,
          },
        },
      },
    });
    expect(ivan.chats.get(bot.id)!.transcript.at(-1)).toMatchObject({
      from: 'bot',
      text: 'Your order',
      buttons: [[{ text: 'Open', url: 'https://shop.example/o/1' }]],
    });
  });
});
