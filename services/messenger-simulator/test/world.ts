// A world on a hand-driven clock, for unit tests.
import type { Bot, MaxBot, Person, TelegramBot } from '../src/domain/types.js';
import { WorldError } from '../src/domain/errors.js';
import type { ActionOutcome, PersonAction } from '../src/domain/person-actions.js';
import { World } from '../src/domain/world.js';

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
