import { normalizeMessengerPhone } from '@mds/contracts/phone';
import type { BotFact } from '../bot-facts.js';
import type { Update } from 'grammy/types';

const START = /^\/start(@\w+)?(\s|$)/;

/**
 * The facts in one Telegram update that the registry needs: /start, the person's own contact, block and
 * unblock (my_chat_member in a private chat). A contact whose user_id is not the sender's is someone
 * else's and is ignored (reference/telegram-bot-api.md §7).
 */
export function factsOfUpdate(update: Update): BotFact[] {
  const updateId = String(update.update_id);
  const message = update.message;
  if (message?.from && message.chat.type === 'private') {
    const chatId = String(message.chat.id);
    const userId = String(message.from.id);
    if (message.contact) {
      if (message.contact.user_id !== message.from.id) return [];
      const phone = normalizeMessengerPhone(message.contact.phone_number);
      return phone ? [{ kind: 'contact-shared', chatId, userId, updateId, phone }] : [];
    }
    if (message.text && START.test(message.text)) return [{ kind: 'started', chatId, userId, updateId }];
    return [];
  }
  const member = update.my_chat_member;
  if (member && member.chat.type === 'private') {
    const chatId = String(member.chat.id);
    const userId = String(member.from.id);
    const was = member.old_chat_member.status;
    const now = member.new_chat_member.status;
    if (now === 'kicked' && was !== 'kicked')
      return [{ kind: 'blocked', chatId, userId, updateId, reason: 'blocked' }];
    if (was === 'kicked' && now !== 'kicked') return [{ kind: 'unblocked', chatId, userId, updateId }];
  }
  return [];
}

/** The offset that confirms every update read so far (one more than the highest update_id). */
export function nextOffset(updates: readonly Update[], current: string | undefined): string | undefined {
  if (updates.length === 0) return current;
  return String(Math.max(...updates.map((u) => u.update_id)) + 1);
}
