import { WorldError } from './errors.js';
import type { MaxUpdate } from './max/objects.js';
import { actAs, type ActionOutcome, type PersonAction } from './person-actions.js';
import { normalizePhone } from './phone.js';
import type { IdCounters, SavedBot, SavedUpdate, SavedWorld } from './saved.js';
import type { TelegramUpdate } from './telegram/objects.js';
import type { Bot, Chat, ChatEntry, MaxBot, Messenger, Person, TelegramBot, WorldDeps } from './types.js';
import { UpdateQueue, type QueuedUpdate } from './update-queue.js';

export interface WorldOptions {
  /** How long an unfetched update is kept (Telegram: 24 hours). */
  updateRetentionMs: number;
  /** Messages kept per chat, oldest dropped first. */
  chatHistoryLimit: number;
}

export interface NewBot {
  messenger: Messenger;
  username: string;
  name?: string | undefined;
  /** A fixed token (e.g. for a sandbox that survives restarts); generated when absent. */
  token?: string | undefined;
}

export interface NewPerson {
  phone: string;
  firstName: string;
  lastName?: string | undefined;
  username?: string | undefined;
  languageCode?: string | undefined;
}

/** `123456789:AA...`: the bot id, a colon, 35 characters (what BotFather hands out). */
export const TELEGRAM_TOKEN = /^(\d{1,15}):([A-Za-z0-9_-]{35})$/;
/** What the Bot API treats as a token at all; anything else is a path it does not know (404). */
export const TELEGRAM_TOKEN_SHAPE = /^\d+:[A-Za-z0-9_-]+$/;
const MAX_TOKEN = /^[A-Za-z0-9_-]{16,256}$/;
const TELEGRAM_USERNAME = /^[A-Za-z][A-Za-z0-9_]{4,31}$/;
const MAX_USERNAME = /^[A-Za-z][A-Za-z0-9_]{2,63}$/;

// Separate number ranges, so a bot id says which messenger it belongs to and people ids never meet them.
const FIRST_TELEGRAM_BOT_ID = 7_000_000_001;
const FIRST_MAX_BOT_ID = 30_000_001;
const FIRST_TELEGRAM_USER_ID = 5_000_000_001;
const FIRST_MAX_USER_ID = 40_000_001;
const FIRST_MAX_DIALOG_ID = 90_000_000_001;

const NO_IDS_YET: IdCounters = { telegramBot: 0, maxBot: 0, person: 0, maxDialog: 0 };

/**
 * Everything the simulator knows, in memory: bots, people, their chats and each bot's pending
 * updates. Pure: time, randomness and the MAC come in through `deps`. Ids only go up: no bot, person or
 * dialog ever takes an id an earlier one had (the counters are saved with the world), so a bot some
 * registry still holds is never mistaken for a new one.
 */
export class World {
  readonly bots = new Map<number, Bot>();
  readonly people = new Map<number, Person>();
  private readonly botsByToken = new Map<string, Bot>();
  private readonly peopleByPhone = new Map<string, Person>();
  private readonly peopleByTelegramId = new Map<number, Person>();
  private readonly peopleByMaxId = new Map<number, Person>();
  private counters: IdCounters = { ...NO_IDS_YET };
  /** Bumped on every change (the inbox reloads when it moves). */
  version = 0;
  /** Called after updates were queued for a bot (wakes long polls, starts webhook pushes). */
  onUpdates: (bot: Bot) => void = () => {};

  constructor(
    readonly deps: WorldDeps,
    private readonly options: WorldOptions,
  ) {}

  botByToken(token: string): Bot | undefined {
    return this.botsByToken.get(token);
  }

  personByPhone(phone: string): Person | undefined {
    return this.peopleByPhone.get(phone);
  }

  personByTelegramId(id: number): Person | undefined {
    return this.peopleByTelegramId.get(id);
  }

  personByMaxId(id: number): Person | undefined {
    return this.peopleByMaxId.get(id);
  }

  /** How many ids of each kind were handed out (what a store keeps so they are never handed out again). */
  get idCounters(): Readonly<IdCounters> {
    return this.counters;
  }

  createBot(input: NewBot): Bot | WorldError {
    const name = input.name?.trim() || input.username;
    if (name.length > 64) return new WorldError(400, 'name: at most 64 characters');
    const taken = [...this.bots.values()].some(
      (b) => b.messenger === input.messenger && b.username.toLowerCase() === input.username.toLowerCase(),
    );
    if (taken) return new WorldError(409, `a ${input.messenger} bot @${input.username} already exists`);
    if (input.token && this.botsByToken.has(input.token)) return new WorldError(409, 'token already in use');
    const now = this.deps.now();
    const bot =
      input.messenger === 'telegram' ? this.telegramBot(input, name, now) : this.maxBot(input, name, now);
    if (bot instanceof WorldError) return bot;
    this.adoptBot(bot);
    this.version++;
    return bot;
  }

  private adoptBot(bot: Bot): void {
    this.bots.set(bot.id, bot);
    this.botsByToken.set(bot.token, bot);
  }

  private telegramBot(input: NewBot, name: string, now: number): TelegramBot | WorldError {
    if (!TELEGRAM_USERNAME.test(input.username) || !/bot$/i.test(input.username)) {
      return new WorldError(
        400,
        'username: 5-32 letters, digits or _, starting with a letter and ending in "bot"',
      );
    }
    let id: number;
    let token: string;
    if (input.token) {
      const match = TELEGRAM_TOKEN.exec(input.token);
      if (!match)
        return new WorldError(400, 'token: a Telegram token is <bot id>:<35 characters of A-Z a-z 0-9 _ ->');
      id = Number(match[1]);
      if (this.bots.has(id)) return new WorldError(409, `bot id ${id} already in use`);
      token = input.token;
      // Generated ids never take this one, even once the bot is gone.
      const taken = id - FIRST_TELEGRAM_BOT_ID + 1;
      if (taken > this.counters.telegramBot) this.counters.telegramBot = taken;
    } else {
      do id = FIRST_TELEGRAM_BOT_ID + this.counters.telegramBot++;
      while (this.bots.has(id));
      token = `${id}:AA${this.deps.randomString(33)}`;
    }
    return {
      messenger: 'telegram',
      id,
      token,
      username: input.username,
      name,
      createdAt: now,
      chats: new Map(),
      updates: new UpdateQueue<TelegramUpdate>(
        100_000_001 + (id % 1000) * 1_000_000,
        this.options.updateRetentionMs,
      ),
      webhook: undefined,
      allowedUpdates: undefined,
      lastWebhookError: undefined,
    };
  }

  private maxBot(input: NewBot, name: string, now: number): MaxBot | WorldError {
    if (!MAX_USERNAME.test(input.username)) {
      return new WorldError(400, 'username: 3-64 letters, digits or _, starting with a letter');
    }
    if (input.token && !MAX_TOKEN.test(input.token)) {
      return new WorldError(400, 'token: 16-256 characters of A-Z a-z 0-9 _ -');
    }
    let id: number;
    do id = FIRST_MAX_BOT_ID + this.counters.maxBot++;
    while (this.bots.has(id));
    return {
      messenger: 'max',
      id,
      token: input.token ?? this.deps.randomString(64),
      username: input.username,
      name,
      createdAt: now,
      chats: new Map(),
      dialogs: new Map(),
      updates: new UpdateQueue<MaxUpdate>(1, this.options.updateRetentionMs),
      subscriptions: [],
      unreadFrom: 1,
    };
  }

  /** The bot disappears; its token then answers like a revoked one. */
  removeBot(bot: Bot): void {
    this.bots.delete(bot.id);
    this.botsByToken.delete(bot.token);
    for (const chat of bot.chats.values()) chat.person.chats.delete(bot.id);
    this.version++;
  }

  createPerson(input: NewPerson): Person | WorldError {
    const phone = normalizePhone(input.phone);
    if (!phone) return new WorldError(400, 'phone_number: 10-15 digits, optionally with a leading +');
    if (this.peopleByPhone.has(phone))
      return new WorldError(409, `a person with phone ${phone} already exists`);
    const firstName = input.firstName.trim();
    if (!firstName) return new WorldError(400, 'first_name: must not be empty');
    const n = this.counters.person++;
    const person: Person = {
      id: n + 1,
      phone,
      firstName,
      lastName: input.lastName?.trim() || undefined,
      username: input.username?.trim() || undefined,
      languageCode: input.languageCode ?? 'ru',
      telegramUserId: FIRST_TELEGRAM_USER_ID + n,
      maxUserId: FIRST_MAX_USER_ID + n,
      createdAt: this.deps.now(),
      deactivated: false,
      chats: new Map(),
    };
    this.adoptPerson(person);
    this.version++;
    return person;
  }

  private adoptPerson(person: Person): void {
    this.people.set(person.id, person);
    this.peopleByPhone.set(person.phone, person);
    this.peopleByTelegramId.set(person.telegramUserId, person);
    this.peopleByMaxId.set(person.maxUserId, person);
  }

  /** The account is deleted: sends to it fail from now on; bots are not told (neither messenger does). */
  deactivate(person: Person): void {
    person.deactivated = true;
    this.version++;
  }

  /** A person does something in their chat with a bot; the bot gets the real update payloads. */
  act(person: Person, bot: Bot, action: PersonAction): ActionOutcome | WorldError {
    return actAs(this, person, bot, action);
  }

  /** The chat a person opens by starting a bot (Telegram: their user id; MAX: a new dialog id). */
  openChat(person: Person, bot: Bot): Chat {
    const chatId =
      bot.messenger === 'telegram' ? person.telegramUserId : FIRST_MAX_DIALOG_ID + this.counters.maxDialog++;
    const chat: Chat = {
      bot,
      person,
      chatId,
      status: 'active',
      nextMessageNumber: 1,
      transcript: [],
      replyKeyboard: undefined,
    };
    this.adoptChat(chat);
    return chat;
  }

  private adoptChat(chat: Chat): void {
    chat.person.chats.set(chat.bot.id, chat);
    chat.bot.chats.set(chat.person.id, chat);
    if (chat.bot.messenger === 'max') chat.bot.dialogs.set(chat.chatId, chat);
  }

  /** Appends to a chat's transcript, keeping only the newest `chatHistoryLimit` entries. */
  record(chat: Chat, entry: ChatEntry): void {
    chat.transcript.push(entry);
    if (chat.transcript.length > this.options.chatHistoryLimit) {
      chat.transcript.splice(0, chat.transcript.length - this.options.chatHistoryLimit);
    }
    this.version++;
  }

  /** Forgets every bot, person and chat. Ids go on from where they were (see the class comment). */
  reset(): void {
    this.bots.clear();
    this.people.clear();
    this.botsByToken.clear();
    this.peopleByPhone.clear();
    this.peopleByTelegramId.clear();
    this.peopleByMaxId.clear();
    this.version++;
  }

  /** Puts back a world saved earlier (see `saved.ts`), replacing this one's bots, people and chats. */
  restore(saved: SavedWorld): void {
    this.reset();
    this.counters = { ...NO_IDS_YET, ...saved.counters };
    for (const { bot, updates } of saved.bots) this.adoptBot(this.restoredBot(bot, updates));
    for (const person of saved.people) this.adoptPerson({ ...person, chats: new Map() });
    for (const { chat, transcript } of saved.chats) {
      const bot = this.bots.get(chat.botId);
      const person = this.people.get(chat.personId);
      if (!bot || !person) continue;
      this.adoptChat({
        bot,
        person,
        chatId: chat.chatId,
        status: chat.status,
        nextMessageNumber: chat.nextMessageNumber,
        transcript: [...transcript],
        replyKeyboard: chat.replyKeyboard ?? undefined,
      });
    }
  }

  private restoredBot(saved: SavedBot, updates: SavedUpdate[]): Bot {
    const { nextUpdateId, ...fields } = saved;
    const common = { ...fields, chats: new Map<number, Chat>() };
    const retention = this.options.updateRetentionMs;
    if (saved.messenger === 'max') {
      return {
        ...common,
        messenger: 'max',
        subscriptions: saved.subscriptions,
        unreadFrom: saved.unreadFrom,
        dialogs: new Map(),
        updates: UpdateQueue.restored(updates as QueuedUpdate<MaxUpdate>[], nextUpdateId, retention),
      };
    }
    return {
      ...common,
      messenger: 'telegram',
      webhook: saved.webhook ?? undefined,
      allowedUpdates: saved.allowedUpdates ? new Set(saved.allowedUpdates) : undefined,
      lastWebhookError: saved.lastWebhookError ?? undefined,
      updates: UpdateQueue.restored(updates as QueuedUpdate<TelegramUpdate>[], nextUpdateId, retention),
    };
  }
}
