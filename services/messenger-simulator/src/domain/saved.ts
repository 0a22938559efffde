// The simulated world as plain data: what a store keeps, and what `World.restore` puts back.
import type { MaxUpdate } from './max/objects.js';
import type { TelegramUpdate } from './telegram/objects.js';
import type {
  Bot,
  ButtonView,
  Chat,
  ChatEntry,
  ChatStatus,
  MaxSubscription,
  Person,
  TelegramWebhook,
} from './types.js';
import type { QueuedUpdate } from './update-queue.js';
import type { World } from './world.js';

/** How many ids of each kind were handed out: the next one is always new, across restarts and resets. */
export interface IdCounters {
  telegramBot: number;
  maxBot: number;
  person: number;
  maxDialog: number;
}

interface SavedBotBase {
  id: number;
  token: string;
  username: string;
  name: string;
  createdAt: number;
  /** The id the bot's next update gets (Telegram `update_id`, MAX sequence number). */
  nextUpdateId: number;
}

export interface SavedTelegramBot extends SavedBotBase {
  messenger: 'telegram';
  webhook: TelegramWebhook | null;
  allowedUpdates: string[] | null;
  lastWebhookError: { at: number; message: string } | null;
}

export interface SavedMaxBot extends SavedBotBase {
  messenger: 'max';
  subscriptions: MaxSubscription[];
  unreadFrom: number;
}

export type SavedBot = SavedTelegramBot | SavedMaxBot;

export type SavedUpdate = QueuedUpdate<TelegramUpdate | MaxUpdate>;

export type SavedPerson = Omit<Person, 'chats'>;

export interface SavedChat {
  botId: number;
  personId: number;
  chatId: number;
  status: ChatStatus;
  nextMessageNumber: number;
  replyKeyboard: ButtonView[][] | null;
}

export interface SavedWorld {
  counters: IdCounters;
  /** In the order they were created, each with its pending updates, oldest first. */
  bots: { bot: SavedBot; updates: SavedUpdate[] }[];
  people: SavedPerson[];
  /** In the order they were opened, each with its transcript, oldest first. */
  chats: { chat: SavedChat; transcript: ChatEntry[] }[];
}

export function savedBot(bot: Bot): SavedBot {
  const base = {
    id: bot.id,
    token: bot.token,
    username: bot.username,
    name: bot.name,
    createdAt: bot.createdAt,
    nextUpdateId: bot.updates.nextId,
  };
  if (bot.messenger === 'max') {
    return { ...base, messenger: 'max', subscriptions: bot.subscriptions, unreadFrom: bot.unreadFrom };
  }
  return {
    ...base,
    messenger: 'telegram',
    webhook: bot.webhook ?? null,
    allowedUpdates: bot.allowedUpdates ? [...bot.allowedUpdates] : null,
    lastWebhookError: bot.lastWebhookError ?? null,
  };
}

export function savedPerson(person: Person): SavedPerson {
  const { chats: _chats, ...fields } = person;
  return fields;
}

export function savedChat(chat: Chat): SavedChat {
  return {
    botId: chat.bot.id,
    personId: chat.person.id,
    chatId: chat.chatId,
    status: chat.status,
    nextMessageNumber: chat.nextMessageNumber,
    replyKeyboard: chat.replyKeyboard ?? null,
  };
}

/** The whole world as plain data (what a store holds once every change is saved). */
export function savedWorld(world: World): SavedWorld {
  const people = [...world.people.values()];
  return {
    counters: { ...world.idCounters },
    bots: [...world.bots.values()].map((bot) => ({
      bot: savedBot(bot),
      updates: bot.updates.read(0, Infinity),
    })),
    people: people.map(savedPerson),
    chats: people.flatMap((person) =>
      [...person.chats.values()].map((chat) => ({ chat: savedChat(chat), transcript: [...chat.transcript] })),
    ),
  };
}
