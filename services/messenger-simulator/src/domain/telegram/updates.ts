// The updates a Telegram bot receives when a person acts in its private chat.
import type { Chat, Person, TelegramBot } from '../types.js';
import {
  botUser,
  personUser,
  privateChat,
  type TelegramUpdate,
  type TgChatMember,
  type TgChatMemberUpdated,
  type TgContact,
  type TgMessage,
} from './objects.js';

/** An update still without its `update_id`, which the queue assigns. */
export type PendingTelegramUpdate =
  { type: 'message'; message: TgMessage } | { type: 'my_chat_member'; change: TgChatMemberUpdated };

export function withUpdateId(pending: PendingTelegramUpdate, updateId: number): TelegramUpdate {
  return pending.type === 'message'
    ? { update_id: updateId, message: pending.message }
    : { update_id: updateId, my_chat_member: pending.change };
}

function seconds(ms: number): number {
  return Math.floor(ms / 1000);
}

function personMessage(chat: Chat, now: number, content: Partial<TgMessage>): TgMessage {
  return {
    message_id: chat.nextMessageNumber++,
    from: personUser(chat.person),
    chat: privateChat(chat.person),
    date: seconds(now),
    ...content,
  };
}

/** `/start` or `/start <payload>` (a deep link `t.me/<bot>?start=<payload>`), a bot command entity. */
export function startMessage(chat: Chat, now: number, payload: string | undefined): PendingTelegramUpdate {
  const text = payload ? `/start ${payload}` : '/start';
  return {
    type: 'message',
    message: personMessage(chat, now, { text, entities: [{ offset: 0, length: 6, type: 'bot_command' }] }),
  };
}

export function textMessage(chat: Chat, now: number, text: string): PendingTelegramUpdate {
  const command = /^\/\w+/.exec(text);
  return {
    type: 'message',
    message: personMessage(chat, now, {
      text,
      ...(command ? { entities: [{ offset: 0, length: command[0].length, type: 'bot_command' }] } : {}),
    }),
  };
}

export interface ContactCard {
  /** Digits only. */
  phone: string;
  firstName: string;
  lastName: string | undefined;
  /** The owner's Telegram user id when the owner uses Telegram. */
  userId: number | undefined;
}

export function contactMessage(
  chat: Chat,
  now: number,
  card: ContactCard,
  withPlus: boolean,
): PendingTelegramUpdate {
  const contact: TgContact = {
    phone_number: withPlus ? `+${card.phone}` : card.phone,
    first_name: card.firstName,
    ...(card.lastName ? { last_name: card.lastName } : {}),
    ...(card.userId === undefined ? {} : { user_id: card.userId }),
  };
  return { type: 'message', message: personMessage(chat, now, { contact }) };
}

function member(bot: TelegramBot, status: 'member' | 'kicked'): TgChatMember {
  return status === 'kicked' ? { user: botUser(bot), status, until_date: 0 } : { user: botUser(bot), status };
}

/** In a private chat `my_chat_member` comes only when the person blocks or unblocks the bot. */
export function membershipChange(
  bot: TelegramBot,
  person: Person,
  now: number,
  from: 'member' | 'kicked',
  to: 'member' | 'kicked',
): PendingTelegramUpdate {
  return {
    type: 'my_chat_member',
    change: {
      chat: privateChat(person),
      from: personUser(person),
      date: seconds(now),
      old_chat_member: member(bot, from),
      new_chat_member: member(bot, to),
    },
  };
}
