import { describe, expect, it } from 'vitest';
import { act, busyWorld, ok, person, telegramBot, testWorld } from '../../test/world.js';
import { RateLimiter } from './rate-limit.js';
import { savedWorld, type SavedWorld } from './saved.js';
import { sendMessage } from './telegram/send-message.js';
import type { MaxBot, TelegramBot } from './types.js';

/** The world as a store would give it back: through JSON, into a new World. */
function restoredCopy(t: ReturnType<typeof testWorld>) {
  const copy = testWorld();
  copy.advance(t.now() - copy.now());
  copy.world.restore(JSON.parse(JSON.stringify(savedWorld(t.world))) as SavedWorld);
  return copy;
}

describe('saving and restoring the world', () => {
  it('gives back the same world, field for field', () => {
    const t = testWorld();
    busyWorld(t);
    const copy = restoredCopy(t);
    expect(savedWorld(copy.world)).toEqual(savedWorld(t.world));
    expect(savedWorld(copy.world).chats).toHaveLength(4);
  });

  it('restores the lookups: tokens, phones, user ids, MAX dialogs, and the chats on both sides', () => {
    const t = testWorld();
    const { tg, max, ivan } = busyWorld(t);
    const { world } = restoredCopy(t);
    const bot = world.botByToken(tg.token) as TelegramBot;
    const maxBot = world.botByToken(max.token) as MaxBot;
    const who = world.personByPhone(ivan.phone)!;
    expect(world.personByTelegramId(ivan.telegramUserId)).toBe(who);
    expect(world.personByMaxId(ivan.maxUserId)).toBe(who);
    const dialog = who.chats.get(max.id)!;
    expect(maxBot.dialogs.get(dialog.chatId)).toBe(dialog);
    expect(maxBot.chats.get(who.id)).toBe(dialog);
    expect(bot.chats.get(who.id)).toBe(who.chats.get(tg.id));
    expect(bot.allowedUpdates).toEqual(new Set(['message', 'my_chat_member']));
    expect(who.chats.get(tg.id)!.replyKeyboard).toEqual([[{ text: 'Yes' }, { text: 'No' }]]);
  });

  it('goes on where it was: update ids, message ids and every kind of id continue', () => {
    const t = testWorld();
    const { tg, ivan } = busyWorld(t);
    const copy = restoredCopy(t);
    const { world } = copy;
    const bot = world.bots.get(tg.id) as TelegramBot;
    const who = world.people.get(ivan.id)!;

    act(world, who, bot, { type: 'send_text', text: 'again' });
    expect(bot.updates.read(0, 100).at(-1)!.id).toBe(tg.updates.nextId);
    const telegram = {
      world,
      limiter: new RateLimiter(false),
      limits: { bot: { ratePerS: 1, burst: 1 }, chat: { ratePerS: 1, burst: 1 } },
    };
    const sent = sendMessage(telegram, bot, { chat_id: who.telegramUserId, text: 'next' });
    // The person's "again" took the next message id in the chat; the bot's message the one after.
    expect(sent.ok && sent.result.message_id).toBe(ivan.chats.get(tg.id)!.nextMessageNumber + 1);

    const newcomer = person(world, '79123456781', 'Olga');
    expect(newcomer.id).toBe(3);
    expect(telegramBot(world, 'later_bot').id).toBeGreaterThan(tg.id);
    expect(ok(world.createBot({ messenger: 'max', username: 'later' })).id).toBeGreaterThan(
      Math.max(...[...t.world.bots.values()].filter((b) => b.messenger === 'max').map((b) => b.id)),
    );
    expect(world.idCounters).toEqual({ telegramBot: 2, maxBot: 2, person: 3, maxDialog: 2 });
  });

  it('drops chats whose bot or person is not in the saved world', () => {
    const t = testWorld();
    busyWorld(t);
    const saved = savedWorld(t.world);
    const copy = testWorld();
    copy.world.restore({ ...saved, people: saved.people.slice(0, 1) });
    expect(savedWorld(copy.world).chats).toHaveLength(2);
  });
});
