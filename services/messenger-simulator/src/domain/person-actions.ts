// What a simulated person can do in a chat, and the update payloads each action gives the bot.
import { WorldError } from './errors.js';
import { maxPersonUser, type MaxUpdate } from './max/objects.js';
import { botStarted, botStopped, contactCreated, textCreated } from './max/updates.js';
import { normalizePhone } from './phone.js';
import { TELEGRAM_DEFAULT_EXCLUDED, type TelegramUpdate } from './telegram/objects.js';
import {
  contactMessage,
  membershipChange,
  startMessage,
  textMessage,
  withUpdateId,
  type PendingTelegramUpdate,
} from './telegram/updates.js';
import type { Bot, Chat, ChatEntry, Person, TelegramBot } from './types.js';
import type { World } from './world.js';

export type ContactChoice =
  | { kind: 'own' }
  | { kind: 'person'; personId: number }
  | { kind: 'card'; phone: string; firstName: string; lastName?: string | undefined };

export type PersonAction =
  | { type: 'start'; payload?: string | undefined }
  | { type: 'share_contact'; contact: ContactChoice; withPlus: boolean }
  | { type: 'send_text'; text: string }
  | { type: 'block' }
  | { type: 'stop' }
  | { type: 'unblock' };

/** The update payloads an action put in the bot's queue, exactly as the bot will receive them. */
export interface ActionOutcome {
  updates: (TelegramUpdate | MaxUpdate)[];
}

/** What a `t.me/<bot>?start=` parameter may hold. */
const TELEGRAM_START_PAYLOAD = /^[A-Za-z0-9_-]{1,64}$/;

/** A person does something in their chat with a bot; the bot gets the real update payloads. */
export function actAs(
  world: World,
  person: Person,
  bot: Bot,
  action: PersonAction,
): ActionOutcome | WorldError {
  if (person.deactivated) return new WorldError(409, `person ${person.id} has deactivated their account`);
  const now = world.deps.now();
  const existing = person.chats.get(bot.id);
  if (action.type === 'start') {
    if (
      bot.messenger === 'telegram' &&
      action.payload !== undefined &&
      !TELEGRAM_START_PAYLOAD.test(action.payload)
    ) {
      return new WorldError(400, 'payload: a Telegram deep link carries 1-64 characters of A-Z a-z 0-9 _ -');
    }
    return start(world, existing ?? world.openChat(person, bot), action.payload, now);
  }
  if (!existing) return new WorldError(409, `person ${person.id} has not started @${bot.username}`);
  const chat = existing;
  if (action.type === 'unblock') {
    if (chat.status !== 'blocked') return new WorldError(409, `@${bot.username} is not blocked`);
    chat.status = 'active';
    note(world, chat, { from: 'person', at: now, text: 'unblocked the bot', event: 'unblock' });
    return publish(world, chat, now, (c) =>
      c.bot.messenger === 'telegram'
        ? [membershipChange(c.bot, person, now, 'kicked', 'member')]
        : [botStarted(c, now, undefined)],
    );
  }
  if (chat.status !== 'active') return new WorldError(409, `@${bot.username} is blocked; unblock it first`);
  switch (action.type) {
    case 'block':
    case 'stop':
      chat.status = 'blocked';
      note(world, chat, { from: 'person', at: now, text: 'blocked the bot', event: 'block' });
      return publish(world, chat, now, (c) =>
        c.bot.messenger === 'telegram'
          ? [membershipChange(c.bot, person, now, 'member', 'kicked')]
          : [botStopped(c, now)],
      );
    case 'send_text':
      return publish(world, chat, now, (c) =>
        c.bot.messenger === 'telegram'
          ? [textMessage(c, now, action.text)]
          : [textCreated(c, now, action.text)],
      );
    case 'share_contact':
      return shareContact(world, chat, action.contact, action.withPlus, now);
  }
}

/** A first start, a repeated one (a new deep link), or a restart after blocking, which also unblocks. */
function start(world: World, chat: Chat, payload: string | undefined, now: number): ActionOutcome {
  const wasBlocked = chat.status === 'blocked';
  chat.status = 'active';
  if (chat.bot.messenger === 'max') {
    const text = payload ? `started the bot: ${payload}` : 'started the bot';
    note(world, chat, { from: 'person', at: now, text, event: 'start' });
  }
  return publish(world, chat, now, (c) => {
    if (c.bot.messenger === 'max') return [botStarted(c, now, payload)];
    const message = startMessage(c, now, payload);
    return wasBlocked ? [membershipChange(c.bot, c.person, now, 'kicked', 'member'), message] : [message];
  });
}

function shareContact(
  world: World,
  chat: Chat,
  choice: ContactChoice,
  withPlus: boolean,
  now: number,
): ActionOutcome | WorldError {
  let owner: Person | undefined;
  let card: { phone: string; firstName: string; lastName: string | undefined };
  if (choice.kind === 'card') {
    // A card from someone's address book holds whatever was typed into it: a number a simulated person has is
    // their account (Telegram adds its user id, MAX its user); anything else goes out as written.
    const phone = normalizePhone(choice.phone);
    owner = phone === undefined ? undefined : world.personByPhone(phone);
    card = { phone: phone ?? choice.phone, firstName: choice.firstName, lastName: choice.lastName };
  } else {
    owner = choice.kind === 'own' ? chat.person : world.people.get(choice.personId);
    if (!owner) return new WorldError(404, `no person ${choice.kind === 'person' ? choice.personId : ''}`);
    card = { phone: owner.phone, firstName: owner.firstName, lastName: owner.lastName };
  }
  const known = owner;
  return publish(world, chat, now, (c) =>
    c.bot.messenger === 'telegram'
      ? [contactMessage(c, now, { ...card, userId: known?.telegramUserId }, withPlus)]
      : [
          contactCreated(
            c.bot,
            c,
            now,
            { ...card, owner: known && maxPersonUser(known, now) },
            withPlus,
            world.deps.sign,
          ),
        ],
  );
}

/** Builds the updates (Telegram or MAX, by the chat's bot), queues them, notes the person's messages. */
function publish(
  world: World,
  chat: Chat,
  now: number,
  build: (chat: Chat) => (PendingTelegramUpdate | MaxUpdate)[],
): ActionOutcome {
  const bot = chat.bot;
  const updates: (TelegramUpdate | MaxUpdate)[] = [];
  for (const item of build(chat)) {
    if ('update_type' in item) {
      notePersonMessage(world, chat, item, now);
      if (bot.messenger === 'max')
        updates.push(bot.updates.append(item.update_type, now, () => item).payload);
    } else if (bot.messenger === 'telegram') {
      if (item.type === 'message') notePersonMessage(world, chat, item, now);
      if (!acceptsTelegram(bot, item.type)) continue;
      updates.push(bot.updates.append(item.type, now, (id) => withUpdateId(item, id)).payload);
    }
  }
  bot.updates.prune(now);
  world.version++;
  if (updates.length) world.onUpdates(bot);
  return { updates };
}

/** The person's own messages go into the chat's transcript too (the inbox shows both sides). */
function notePersonMessage(
  world: World,
  chat: Chat,
  item: PendingTelegramUpdate | MaxUpdate,
  now: number,
): void {
  if ('update_type' in item) {
    if (item.update_type !== 'message_created') return;
    const body = item.message.body;
    const vcf = (body.attachments?.[0] as { payload?: { vcf_info?: string } } | undefined)?.payload?.vcf_info;
    const contact =
      vcf === undefined ? undefined : `shared a contact: ${/^TEL[^:]*:(.*)$/m.exec(vcf)?.[1] ?? ''}`;
    note(world, chat, {
      from: 'person',
      messageId: body.mid,
      at: now,
      text: contact ?? body.text ?? '',
      event: contact ? 'contact' : 'text',
    });
    return;
  }
  if (item.type !== 'message') return;
  const m = item.message;
  const contact = m.contact && `shared a contact: ${m.contact.first_name} ${m.contact.phone_number}`;
  note(world, chat, {
    from: 'person',
    messageId: m.message_id,
    at: now,
    text: contact ?? m.text ?? '',
    event: contact ? 'contact' : m.text?.startsWith('/start') ? 'start' : 'text',
  });
}

function note(world: World, chat: Chat, entry: Omit<ChatEntry, 'buttons' | 'format'>): void {
  world.record(chat, { ...entry, buttons: [], format: undefined });
}

/** Whether the bot's `allowed_updates` let this type in; unwanted updates are never stored. */
export function acceptsTelegram(bot: TelegramBot, type: string): boolean {
  const allowed = bot.allowedUpdates;
  if (!allowed || allowed.size === 0) return !TELEGRAM_DEFAULT_EXCLUDED.has(type);
  return allowed.has(type);
}
