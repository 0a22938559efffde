// MAX Bot API objects as they travel on the wire (the fields the simulator fills).
import type { Chat, MaxBot, Person } from '../types.js';

export interface MaxUser {
  user_id: number;
  first_name: string;
  last_name?: string;
  /** Deprecated by MAX but still sent: the full name. */
  name: string;
  username: string | null;
  is_bot: boolean;
  last_activity_time: number;
}

export interface MaxRecipient {
  chat_id: number;
  chat_type: 'dialog';
  user_id: number;
}

export interface MaxMessageBody {
  mid: string;
  seq: number;
  text: string | null;
  attachments?: unknown[];
}

export interface MaxMessage {
  sender: MaxUser;
  recipient: MaxRecipient;
  timestamp: number;
  body: MaxMessageBody;
}

export type MaxUpdate =
  | {
      update_type: 'bot_started';
      timestamp: number;
      chat_id: number;
      user: MaxUser;
      payload?: string;
      user_locale: string;
    }
  | { update_type: 'bot_stopped'; timestamp: number; chat_id: number; user: MaxUser; user_locale: string }
  | { update_type: 'message_created'; timestamp: number; message: MaxMessage; user_locale: string };

/** Every update type MAX knows: the valid values of `types` and `update_types`. */
export const MAX_UPDATE_TYPES = new Set([
  'bot_added',
  'bot_started',
  'bot_stopped',
  'bot_removed',
  'chat_title_changed',
  'dialog_cleared',
  'dialog_muted',
  'dialog_unmuted',
  'dialog_removed',
  'message_callback',
  'message_created',
  'message_edited',
  'message_removed',
  'user_added',
  'user_removed',
]);

export function fullName(first: string, last: string | undefined): string {
  return last ? `${first} ${last}` : first;
}

export function maxPersonUser(person: Person, now: number): MaxUser {
  return {
    user_id: person.maxUserId,
    first_name: person.firstName,
    ...(person.lastName ? { last_name: person.lastName } : {}),
    name: fullName(person.firstName, person.lastName),
    username: person.username ?? null,
    is_bot: false,
    last_activity_time: now,
  };
}

export function maxBotUser(bot: MaxBot, now: number): MaxUser {
  return {
    user_id: bot.id,
    first_name: bot.name,
    name: bot.name,
    username: bot.username,
    is_bot: true,
    last_activity_time: now,
  };
}

/** `GET /me`: `BotInfo` (a `User` with optional description and commands). */
export function botInfo(bot: MaxBot, now: number) {
  return { ...maxBotUser(bot, now), description: null };
}

/** A message id: `mid.` and 32 hex digits, unique per dialog and sequence number. */
export function messageId(chat: Chat, seq: number): string {
  return `mid.${chat.chatId.toString(16).padStart(16, '0')}${seq.toString(16).padStart(16, '0')}`;
}
