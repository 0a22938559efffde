// The updates a MAX bot receives when a person acts in its dialog.
import type { Chat, MaxBot, Sign } from '../types.js';
import { fullName, maxPersonUser, messageId, type MaxUpdate, type MaxUser } from './objects.js';

export function botStarted(chat: Chat, now: number, payload: string | undefined): MaxUpdate {
  return {
    update_type: 'bot_started',
    timestamp: now,
    chat_id: chat.chatId,
    user: maxPersonUser(chat.person, now),
    ...(payload ? { payload } : {}),
    user_locale: chat.person.languageCode,
  };
}

export function botStopped(chat: Chat, now: number): MaxUpdate {
  return {
    update_type: 'bot_stopped',
    timestamp: now,
    chat_id: chat.chatId,
    user: maxPersonUser(chat.person, now),
    user_locale: chat.person.languageCode,
  };
}

function messageCreated(chat: Chat, now: number, text: string, attachments?: unknown[]): MaxUpdate {
  const seq = chat.nextMessageNumber++;
  return {
    update_type: 'message_created',
    timestamp: now,
    message: {
      sender: maxPersonUser(chat.person, now),
      recipient: { chat_id: chat.chatId, chat_type: 'dialog', user_id: chat.bot.id },
      timestamp: now,
      body: { mid: messageId(chat, seq), seq, text, ...(attachments ? { attachments } : {}) },
    },
    user_locale: chat.person.languageCode,
  };
}

export function textCreated(chat: Chat, now: number, text: string): MaxUpdate {
  return messageCreated(chat, now, text);
}

/**
 * A vCard 3.0 text value as ez-vcard writes it (RFC 2426 §4): backslash, comma and semicolon escaped, a line
 * break as `\n`, so that no name or number can end its line and start another (a second TEL, say).
 */
function vcardText(value: string): string {
  return value.replace(/[\\,;]/g, (c) => `\\${c}`).replace(/\r\n|\r|\n/g, '\\n');
}

/** The vCard MAX puts in `vcf_info` (shape of the official sample; TEL with or without `+`). */
export function vcard(phone: string, name: string, withPlus: boolean): string {
  const tel = vcardText(withPlus ? `+${phone}` : phone);
  return `BEGIN:VCARD\r\nVERSION:3.0\r\nPRODID:ez-vcard 0.10.3\r\nTEL;TYPE=cell:${tel}\r\nFN:${vcardText(name)}\r\nEND:VCARD\r\n`;
}

export interface MaxContactCard {
  phone: string;
  firstName: string;
  lastName: string | undefined;
  /** The owner's MAX user when the owner uses MAX. */
  owner: MaxUser | undefined;
}

/**
 * A `message_created` carrying a `contact` attachment. `hash` is HMAC-SHA256 of `vcf_info` keyed with
 * the bot token, the formula a third-party verifier uses (the real one is unconfirmed).
 */
export function contactCreated(
  bot: MaxBot,
  chat: Chat,
  now: number,
  card: MaxContactCard,
  withPlus: boolean,
  sign: Sign,
): MaxUpdate {
  const vcfInfo = vcard(card.phone, fullName(card.firstName, card.lastName), withPlus);
  const payload = {
    vcf_info: vcfInfo,
    hash: sign(bot.token, vcfInfo),
    ...(card.owner ? { max_info: card.owner } : {}),
  };
  return messageCreated(chat, now, '', [{ type: 'contact', payload }]);
}
