import { describe, expect, it } from 'vitest';
import { act, maxBot, ok, person, T0, telegramBot, testWorld } from '../../test/world.js';
import { WorldError } from './errors.js';
import { normalizePhone } from './phone.js';
import { TELEGRAM_TOKEN } from './world.js';

const seconds = Math.floor(T0 / 1000);

describe('bots', () => {
  it('gets a BotFather-shaped Telegram token whose prefix is the bot id, and an opaque MAX token', () => {
    const { world } = testWorld();
    const tg = telegramBot(world);
    expect(tg.token).toMatch(TELEGRAM_TOKEN);
    expect(tg.token.split(':')[0]).toBe(String(tg.id));
    expect(tg.token.split(':')[1]).toHaveLength(35);
    expect(tg.token.split(':')[1]).toMatch(/^AA/);
    const mx = maxBot(world);
    expect(mx.token).toMatch(/^[A-Za-z0-9_-]{64}$/);
    expect(world.botByToken(tg.token)).toBe(tg);
    expect(world.botByToken(mx.token)).toBe(mx);
    expect(tg.id).not.toBe(mx.id);
  });

  it('refuses Telegram usernames BotFather would refuse, duplicates, and malformed fixed tokens', () => {
    const { world } = testWorld();
    telegramBot(world, 'shop_bot');
    const cases = [
      world.createBot({ messenger: 'telegram', username: 'shop' }),
      world.createBot({ messenger: 'telegram', username: 'SHOP_BOT' }),
      world.createBot({ messenger: 'telegram', username: 'other_bot', token: '123:short' }),
      world.createBot({ messenger: 'max', username: 'x' }),
    ];
    expect(cases.map((c) => (c instanceof WorldError ? c.status : 'created'))).toEqual([400, 409, 400, 400]);
  });

  it('keeps a fixed token (a sandbox that survives restarts) and takes the bot id from it', () => {
    const { world } = testWorld();
    const token = `123456789:AA${'b'.repeat(33)}`;
    const bot = ok(world.createBot({ messenger: 'telegram', username: 'fixed_bot', token }));
    expect(bot.id).toBe(123456789);
    expect(bot.token).toBe(token);
    const again = world.createBot({ messenger: 'telegram', username: 'other_bot', token });
    expect(again).toBeInstanceOf(WorldError);
  });

  it('forgets a removed bot: its token no longer resolves and its chats are gone', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world);
    act(world, ivan, bot, { type: 'start' });
    world.removeBot(bot);
    expect(world.botByToken(bot.token)).toBeUndefined();
    expect(ivan.chats.size).toBe(0);
  });
});

describe('people', () => {
  it('normalises phone numbers to digits and refuses what is not one', () => {
    expect(normalizePhone('+7 (912) 345-67-89')).toBe('79123456789');
    expect(normalizePhone('380501234567')).toBe('380501234567');
    expect(normalizePhone('12345')).toBeUndefined();
    expect(normalizePhone('+7912abc')).toBeUndefined();
  });

  it('gives each person distinct Telegram and MAX user ids and one account per phone', () => {
    const { world } = testWorld();
    const ivan = person(world, '79123456789');
    const olga = person(world, '79990001122', 'Olga');
    expect(new Set([ivan.telegramUserId, ivan.maxUserId, olga.telegramUserId, olga.maxUserId]).size).toBe(4);
    const duplicate = world.createPerson({ phone: '+79123456789', firstName: 'Other' });
    expect(duplicate).toBeInstanceOf(WorldError);
    expect((duplicate as WorldError).status).toBe(409);
  });
});

describe('a person acting in a Telegram chat', () => {
  it('start with a deep-link payload arrives as a /start message with a bot_command entity', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world);
    const { updates } = act(world, ivan, bot, { type: 'start', payload: 'company-42' });
    expect(updates).toEqual([
      {
        update_id: bot.updates.nextId - 1,
        message: {
          message_id: 1,
          from: { id: ivan.telegramUserId, is_bot: false, first_name: 'Ivan', language_code: 'ru' },
          chat: { id: ivan.telegramUserId, type: 'private', first_name: 'Ivan' },
          date: seconds,
          text: '/start company-42',
          entities: [{ offset: 0, length: 6, type: 'bot_command' }],
        },
      },
    ]);
    expect(bot.updates.size).toBe(1);
  });

  it('sharing their own contact sends message.contact with user_id equal to from.id', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world);
    act(world, ivan, bot, { type: 'start' });
    const { updates } = act(world, ivan, bot, {
      type: 'share_contact',
      contact: { kind: 'own' },
      withPlus: false,
    });
    const message = (updates[0] as unknown as { message: Record<string, unknown> }).message;
    expect(message.contact).toEqual({
      phone_number: '79123456789',
      first_name: 'Ivan',
      user_id: ivan.telegramUserId,
    });
    expect((message.from as { id: number }).id).toBe(ivan.telegramUserId);
    expect(message.message_id).toBe(2);
  });

  it("sharing someone else's contact carries the other user's id, or none for a number not on Telegram", () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world);
    const olga = person(world, '79990001122', 'Olga');
    act(world, ivan, bot, { type: 'start' });
    const other = act(world, ivan, bot, {
      type: 'share_contact',
      contact: { kind: 'person', personId: olga.id },
      withPlus: true,
    });
    const card = act(world, ivan, bot, {
      type: 'share_contact',
      contact: { kind: 'card', phone: '+380501234567', firstName: 'Petro', lastName: 'K' },
      withPlus: false,
    });
    const contactOf = (o: { updates: unknown[] }) =>
      (o.updates[0] as { message: { contact: unknown } }).message.contact;
    expect(contactOf(other)).toEqual({
      phone_number: '+79990001122',
      first_name: 'Olga',
      user_id: olga.telegramUserId,
    });
    expect(contactOf(card)).toEqual({ phone_number: '380501234567', first_name: 'Petro', last_name: 'K' });
  });

  it('block and unblock arrive as my_chat_member (member -> kicked -> member); restarting a blocked bot also unblocks', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world);
    act(world, ivan, bot, { type: 'start' });
    const blocked = act(world, ivan, bot, { type: 'block' }).updates[0] as unknown as {
      my_chat_member: Record<string, unknown>;
    };
    expect(blocked.my_chat_member).toEqual({
      chat: { id: ivan.telegramUserId, type: 'private', first_name: 'Ivan' },
      from: { id: ivan.telegramUserId, is_bot: false, first_name: 'Ivan', language_code: 'ru' },
      date: seconds,
      old_chat_member: {
        user: { id: bot.id, is_bot: true, first_name: 'Shop', username: 'shop_bot' },
        status: 'member',
      },
      new_chat_member: {
        user: { id: bot.id, is_bot: true, first_name: 'Shop', username: 'shop_bot' },
        status: 'kicked',
        until_date: 0,
      },
    });
    expect(ivan.chats.get(bot.id)!.status).toBe('blocked');
    const unblocked = act(world, ivan, bot, { type: 'unblock' }).updates[0] as unknown as {
      my_chat_member: Record<string, { status: string }>;
    };
    expect([
      unblocked.my_chat_member.old_chat_member!.status,
      unblocked.my_chat_member.new_chat_member!.status,
    ]).toEqual(['kicked', 'member']);
    act(world, ivan, bot, { type: 'stop' });
    const restart = act(world, ivan, bot, { type: 'start' }).updates;
    expect(restart.map((u) => Object.keys(u)[1])).toEqual(['my_chat_member', 'message']);
  });

  it('refuses what the person cannot do: write before starting, act on a blocked bot, act after deactivating', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world);
    const status = (r: unknown) => (r instanceof WorldError ? r.status : 'ok');
    expect(
      status(world.act(ivan, bot, { type: 'share_contact', contact: { kind: 'own' }, withPlus: false })),
    ).toBe(409);
    expect(status(world.act(ivan, bot, { type: 'unblock' }))).toBe(409);
    act(world, ivan, bot, { type: 'start' });
    act(world, ivan, bot, { type: 'block' });
    expect(status(world.act(ivan, bot, { type: 'send_text', text: 'hi' }))).toBe(409);
    expect(status(world.act(ivan, bot, { type: 'block' }))).toBe(409);
    world.deactivate(ivan);
    expect(status(world.act(ivan, bot, { type: 'start' }))).toBe(409);
    expect(
      status(world.act(person(world, '79990001122'), bot, { type: 'start', payload: 'bad payload!' })),
    ).toBe(400);
  });

  it('drops update types the bot excluded with allowed_updates, but the chat still changes', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    bot.allowedUpdates = new Set(['message']);
    const ivan = person(world);
    act(world, ivan, bot, { type: 'start' });
    expect(act(world, ivan, bot, { type: 'block' }).updates).toEqual([]);
    expect(bot.updates.size).toBe(1);
    expect(ivan.chats.get(bot.id)!.status).toBe('blocked');
  });

  it('tells the listener once per action that updates were queued', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const seen: number[] = [];
    world.onUpdates = (b) => seen.push(b.id);
    act(world, person(world), bot, { type: 'start' });
    expect(seen).toEqual([bot.id]);
  });

  it('keeps only the newest messages of a chat', () => {
    const { world } = testWorld();
    const bot = telegramBot(world);
    const ivan = person(world);
    act(world, ivan, bot, { type: 'start' });
    for (let i = 0; i < 7; i++) act(world, ivan, bot, { type: 'send_text', text: `m${i}` });
    expect(ivan.chats.get(bot.id)!.transcript.map((e) => e.text)).toEqual(['m2', 'm3', 'm4', 'm5', 'm6']);
  });
});

describe('a person acting in a MAX dialog', () => {
  it('start arrives as bot_started with the payload, in a dialog whose chat_id is not the user id', () => {
    const { world } = testWorld();
    const bot = maxBot(world);
    const ivan = person(world);
    const { updates } = act(world, ivan, bot, { type: 'start', payload: 'company-42' });
    const chatId = ivan.chats.get(bot.id)!.chatId;
    expect(chatId).not.toBe(ivan.maxUserId);
    expect(updates).toEqual([
      {
        update_type: 'bot_started',
        timestamp: T0,
        chat_id: chatId,
        user: {
          user_id: ivan.maxUserId,
          first_name: 'Ivan',
          name: 'Ivan',
          username: null,
          is_bot: false,
          last_activity_time: T0,
        },
        payload: 'company-42',
        user_locale: 'ru',
      },
    ]);
  });

  it('a shared contact is message_created with a contact attachment: vCard, max_info of the owner, hash', () => {
    const { world } = testWorld();
    const bot = maxBot(world);
    const ivan = person(world);
    act(world, ivan, bot, { type: 'start' });
    const own = act(world, ivan, bot, { type: 'share_contact', contact: { kind: 'own' }, withPlus: false })
      .updates[0] as {
      message: {
        sender: { user_id: number };
        recipient: unknown;
        body: { mid: string; seq: number; text: string; attachments: unknown[] };
      };
    };
    const chatId = ivan.chats.get(bot.id)!.chatId;
    expect(own.message.sender.user_id).toBe(ivan.maxUserId);
    expect(own.message.recipient).toEqual({ chat_id: chatId, chat_type: 'dialog', user_id: bot.id });
    expect(own.message.body.mid).toMatch(/^mid\.[0-9a-f]{32}$/);
    const vcf =
      'BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:ez-vcard 0.10.3\r\nTEL;TYPE=cell:79123456789\r\nFN:Ivan\r\nEND:VCARD\r\n';
    expect(own.message.body.attachments).toEqual([
      {
        type: 'contact',
        payload: {
          vcf_info: vcf,
          hash: `hmac(${bot.token}|${vcf.length})`,
          max_info: expect.objectContaining({ user_id: ivan.maxUserId }),
        },
      },
    ]);
    const foreign = act(world, ivan, bot, {
      type: 'share_contact',
      contact: { kind: 'card', phone: '79990001122', firstName: 'Olga' },
      withPlus: true,
    }).updates[0] as { message: { body: { attachments: { payload: Record<string, unknown> }[] } } };
    const payload = foreign.message.body.attachments[0]!.payload;
    expect(payload.vcf_info).toContain('TEL;TYPE=cell:+79990001122\r\n');
    expect(payload.max_info).toBeUndefined();
  });

  it('stop is bot_stopped; unblock and start again are bot_started', () => {
    const { world } = testWorld();
    const bot = maxBot(world);
    const ivan = person(world);
    act(world, ivan, bot, { type: 'start' });
    const types = (o: { updates: unknown[] }) =>
      o.updates.map((u) => (u as { update_type: string }).update_type);
    expect(types(act(world, ivan, bot, { type: 'stop' }))).toEqual(['bot_stopped']);
    expect(types(act(world, ivan, bot, { type: 'unblock' }))).toEqual(['bot_started']);
    expect(types(act(world, ivan, bot, { type: 'block' }))).toEqual(['bot_stopped']);
    expect(types(act(world, ivan, bot, { type: 'start' }))).toEqual(['bot_started']);
  });

  it('deactivating an account sends nothing to any bot', () => {
    const { world } = testWorld();
    const bot = maxBot(world);
    const ivan = person(world);
    act(world, ivan, bot, { type: 'start' });
    world.deactivate(ivan);
    expect(bot.updates.size).toBe(1);
    expect(ivan.deactivated).toBe(true);
  });
});

describe('ids', () => {
  it('reset forgets bots and people, and ids go on: nothing made afterwards takes an earlier id', () => {
    const { world } = testWorld();
    const first = telegramBot(world);
    const firstMax = maxBot(world);
    const ivan = person(world);
    act(world, ivan, firstMax, { type: 'start' });
    const dialog = ivan.chats.get(firstMax.id)!.chatId;
    world.reset();
    expect(world.bots.size + world.people.size).toBe(0);
    expect(telegramBot(world).id).toBeGreaterThan(first.id);
    const max = maxBot(world);
    expect(max.id).toBeGreaterThan(firstMax.id);
    const petr = person(world, '79123456780', 'Petr');
    expect(petr.id).toBeGreaterThan(ivan.id);
    expect(petr.telegramUserId).toBeGreaterThan(ivan.telegramUserId);
    act(world, petr, max, { type: 'start' });
    expect(petr.chats.get(max.id)!.chatId).toBeGreaterThan(dialog);
  });

  it('never generates the id of a bot that had a fixed token, even once that bot is gone', () => {
    const { world } = testWorld();
    const fixed = ok(
      world.createBot({
        messenger: 'telegram',
        username: 'demo_bot',
        token: `7000000003:AA${'d'.repeat(33)}`,
      }),
    );
    world.removeBot(fixed);
    const made = [telegramBot(world, 'one_bot'), telegramBot(world, 'two_bot')].map((b) => b.id);
    expect(made).toEqual([7000000004, 7000000005]);
  });
});
