// The simulated world: bots, people, the chats between them, and each bot's queue of updates.
import type { MaxUpdate } from './max/objects.js';
import type { TelegramUpdate } from './telegram/objects.js';
import type { UpdateQueue } from './update-queue.js';

export type Messenger = 'telegram' | 'max';

/** Milliseconds since the epoch. */
export type Clock = () => number;
/** `length` characters from `A-Z a-z 0-9 _ -`, unpredictable (tokens). */
export type RandomString = (length: number) => string;
/** Hex HMAC-SHA256 of `message` under `key` (MAX contact hash). */
export type Sign = (key: string, message: string) => string;

/** What the world needs from outside: time, randomness and a MAC; all plain functions. */
export interface WorldDeps {
  now: Clock;
  randomString: RandomString;
  sign: Sign;
}

export interface Person {
  /** Id in the control API. */
  readonly id: number;
  /** E.164 digits without `+`. */
  readonly phone: string;
  readonly firstName: string;
  readonly lastName: string | undefined;
  readonly username: string | undefined;
  readonly languageCode: string;
  readonly telegramUserId: number;
  readonly maxUserId: number;
  readonly createdAt: number;
  deactivated: boolean;
  /** Chats with bots, by bot id. */
  readonly chats: Map<number, Chat>;
}

/** A link button, or any other button a bot put under a message (kept as sent). */
export interface ButtonView {
  text: string;
  /** The URL of a link button. */
  url?: string;
  /** Any other kind: `callback`, `request_contact`, ... (MAX types; Telegram field names). */
  kind?: string;
}

export interface ChatEntry {
  readonly from: 'bot' | 'person';
  /** Telegram `message_id` or MAX `mid` (none for a block or unblock). */
  readonly messageId?: number | string;
  readonly at: number;
  readonly text: string;
  /** `parse_mode` (Telegram) or `format` (MAX) as sent. */
  readonly format: string | undefined;
  readonly buttons: ButtonView[][];
  /** A reply keyboard (Telegram) shown under the input field until removed. */
  readonly replyKeyboard?: ButtonView[][] | undefined;
  /** What a person did, for the transcript: `start`, `contact`, `text`, `block`, `unblock`. */
  readonly event?: string;
}

export type ChatStatus = 'active' | 'blocked';

export interface Chat {
  readonly bot: Bot;
  readonly person: Person;
  /** Telegram: the person's user id. MAX: the dialog's own id. */
  readonly chatId: number;
  status: ChatStatus;
  /** Next Telegram `message_id` / MAX `seq` in this chat. */
  nextMessageNumber: number;
  readonly transcript: ChatEntry[];
  /** Telegram reply keyboard currently shown, if any. */
  replyKeyboard: ButtonView[][] | undefined;
}

interface BotBase {
  /** The bot's user id in its messenger; also its id in the control API. */
  readonly id: number;
  readonly token: string;
  readonly username: string;
  readonly name: string;
  readonly createdAt: number;
  /** Chats by person id. */
  readonly chats: Map<number, Chat>;
}

export interface TelegramWebhook {
  url: string;
  secretToken: string | undefined;
  maxConnections: number;
}

export interface TelegramBot extends BotBase {
  readonly messenger: 'telegram';
  readonly updates: UpdateQueue<TelegramUpdate>;
  webhook: TelegramWebhook | undefined;
  /** The last `allowed_updates` given; undefined means the default set. */
  allowedUpdates: ReadonlySet<string> | undefined;
  lastWebhookError: { at: number; message: string } | undefined;
}

export interface MaxSubscription {
  url: string;
  secret: string | undefined;
  updateTypes: string[];
  time: number;
}

export interface MaxBot extends BotBase {
  readonly messenger: 'max';
  readonly updates: UpdateQueue<MaxUpdate>;
  subscriptions: MaxSubscription[];
  /** Updates below this sequence number were already returned to a poll without a marker. */
  unreadFrom: number;
  /** Dialogs by chat id. */
  readonly dialogs: Map<number, Chat>;
}

export type Bot = TelegramBot | MaxBot;
