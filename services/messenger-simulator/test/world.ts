// A world on a hand-driven clock, for unit tests.
import type { Bot, MaxBot, Person, TelegramBot } from '../src/domain/types.js';
import { WorldError } from '../src/domain/errors.js';
import type { ActionOutcome, PersonAction } from '../src/domain/person-actions.js';
import { World } from '../src/domain/world.js';
import { takeUpdates as takeMaxUpdates, subscribe } from '../src/domain/max/updates-api.js';
import { sendMessage as maxSend } from '../src/domain/max/send-message.js';
import { RateLimiter } from '../src/domain/rate-limit.js';
import { takeUpdates as takeTelegramUpdates } from '../src/domain/telegram/get-updates.js';
import { sendMessage as telegramSend } from '../src/domain/telegram/send-message.js';

export const T0 = Date.UTC(2026, 0, 15, 12, 0, 0);

export function testWorld() {
  let now = T0;
  let counter = 0;
  const world = new World(
    {
      now: () => now,
      // Distinct, recognisable tokens.
      randomString: (length) => String(++counter).padStart(length, 'k'),
      sign: (key, message) => `hmac(${key}|${message.length})`,
    },
    { updateRetentionMs: 24 * 3_600_000, chatHistoryLimit: 5 },
  );
  return {
    world,
    advance: (ms: number) => (now += ms),
    now: () => now,
  };
}

export function ok<T>(value: T | WorldError): T {
  if (value instanceof WorldError) throw new Error(`unexpected WorldError ${value.status}: ${value.message}`);
  return value;
}

export function telegramBot(world: World, username = 'shop_bot'): TelegramBot {
  return ok(world.createBot({ messenger: 'telegram', username, name: 'Shop' })) as TelegramBot;
}

export function maxBot(world: World, username = 'shop'): MaxBot {
  return ok(world.createBot({ messenger: 'max', username, name: 'Shop' })) as MaxBot;
}

export function person(world: World, phone = '79123456789', firstName = 'Ivan'): Person {
  return ok(world.createPerson({ phone, firstName }));
}

export function act(world: World, who: Person, bot: Bot, action: PersonAction): ActionOutcome {
  return ok(world.act(who, bot, action));
}

/**
 * A world with every kind of state it keeps: both messengers' bots with chats, transcripts (one with a
 * reply keyboard), pending and confirmed updates, a webhook with allowed updates and a noted error, MAX
 * subscriptions and a read position, a blocked chat and a deactivated person.
 */
export function busyWorld(t: ReturnType<typeof testWorld>) {
  const { world } = t;
  const tg = telegramBot(world);
  const max = maxBot(world);
  const ivan = person(world);
  const petr = person(world, '79123456780', 'Petr');
  const limits = { bot: { ratePerS: 30, burst: 30 }, chat: { ratePerS: 1, burst: 3 } };
  const telegram = { world, limiter: new RateLimiter(false), limits };
  for (const who of [ivan, petr]) {
    act(world, who, tg, { type: 'start', payload: 'promo' });
    act(world, who, max, { type: 'start' });
    act(world, who, tg, { type: 'share_contact', contact: { kind: 'own' }, withPlus: false });
  }
  const keyboard = { keyboard: [[{ text: 'Yes' }, { text: 'No' }]] };
  telegramSend(telegram, tg, { chat_id: ivan.telegramUserId, text: 'Ready?', reply_markup: keyboard });
  telegramSend(telegram, tg, { chat_id: petr.telegramUserId, text: '*Hi*', parse_mode: 'MarkdownV2' });
  const link = [
    {
      type: 'inline_keyboard',
      payload: { buttons: [[{ type: 'link', text: 'Track', url: 'https://x.example' }]] },
    },
  ];
  maxSend(world, max, { user_id: String(ivan.maxUserId) }, { text: 'Shipped', attachments: link });
  const tgUpdates = takeTelegramUpdates(
    tg,
    { offset: undefined, limit: 100, timeoutS: 0, allowedUpdates: undefined },
    t.now(),
  );
  takeTelegramUpdates(
    tg,
    { offset: tgUpdates[1]!.update_id, limit: 100, timeoutS: 0, allowedUpdates: undefined },
    t.now(),
  );
  takeMaxUpdates(max, { marker: undefined, limit: 1, timeoutS: 0, types: undefined }, t.now());
  tg.allowedUpdates = new Set(['message', 'my_chat_member']);
  tg.webhook = { url: 'https://hooks.example/tg', secretToken: 'secret_1', maxConnections: 40 };
  tg.lastWebhookError = { at: t.now(), message: 'Connection refused' };
  subscribe(max, { url: 'https://hooks.example/max', update_types: ['message_created'] }, t.now(), false);
  act(world, petr, max, { type: 'stop' });
  world.deactivate(petr);
  return { tg, max, ivan, petr };
}
