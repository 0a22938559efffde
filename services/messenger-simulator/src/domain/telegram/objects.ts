// Telegram Bot API objects as they travel on the wire (the fields the simulator fills).
import type { Person, TelegramBot } from '../types.js';

export interface TgUser {
  id: number;
  is_bot: boolean;
  first_name: string;
  last_name?: string;
  username?: string;
  language_code?: string;
}

export interface TgPrivateChat {
  id: number;
  type: 'private';
  first_name: string;
  last_name?: string;
  username?: string;
}

export interface TgContact {
  phone_number: string;
  first_name: string;
  last_name?: string;
  user_id?: number;
}

export interface TgMessage {
  message_id: number;
  from: TgUser;
  chat: TgPrivateChat;
  date: number;
  text?: string;
  entities?: { offset: number; length: number; type: string }[];
  contact?: TgContact;
  reply_markup?: unknown;
  link_preview_options?: unknown;
}

export interface TgChatMember {
  user: TgUser;
  status: 'member' | 'kicked';
  until_date?: number;
}

export interface TgChatMemberUpdated {
  chat: TgPrivateChat;
  from: TgUser;
  date: number;
  old_chat_member: TgChatMember;
  new_chat_member: TgChatMember;
}

export type TelegramUpdate =
  { update_id: number; message: TgMessage } | { update_id: number; my_chat_member: TgChatMemberUpdated };

export type TelegramUpdateType = 'message' | 'my_chat_member';

/** Every update type of the Bot API: the valid members of `allowed_updates`. */
export const TELEGRAM_UPDATE_TYPES = new Set([
  'message',
  'edited_message',
  'channel_post',
  'edited_channel_post',
  'business_connection',
  'business_message',
  'edited_business_message',
  'deleted_business_messages',
  'message_reaction',
  'message_reaction_count',
  'inline_query',
  'chosen_inline_result',
  'callback_query',
  'shipping_query',
  'pre_checkout_query',
  'purchased_paid_media',
  'poll',
  'poll_answer',
  'my_chat_member',
  'chat_member',
  'chat_join_request',
  'chat_boost',
  'removed_chat_boost',
]);

/** What a bot receives when it never said: everything except these three (Bot API docs). */
export const TELEGRAM_DEFAULT_EXCLUDED = new Set([
  'chat_member',
  'message_reaction',
  'message_reaction_count',
]);

export function botUser(bot: TelegramBot): TgUser {
  return { id: bot.id, is_bot: true, first_name: bot.name, username: bot.username };
}

export function personUser(person: Person): TgUser {
  return {
    id: person.telegramUserId,
    is_bot: false,
    first_name: person.firstName,
    ...(person.lastName ? { last_name: person.lastName } : {}),
    ...(person.username ? { username: person.username } : {}),
    language_code: person.languageCode,
  };
}

export function privateChat(person: Person): TgPrivateChat {
  return {
    id: person.telegramUserId,
    type: 'private',
    first_name: person.firstName,
    ...(person.lastName ? { last_name: person.lastName } : {}),
    ...(person.username ? { username: person.username } : {}),
  };
}

/** The `User` returned by getMe. */
export function getMeResult(bot: TelegramBot) {
  return {
    ...botUser(bot),
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
    can_connect_to_business: false,
    has_main_web_app: false,
  };
}
