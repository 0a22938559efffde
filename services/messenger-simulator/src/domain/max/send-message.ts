import type { Chat, MaxBot } from '../types.js';
import type { World } from '../world.js';
import { mx, ok, type MaxError, type MaxResult } from './errors.js';
import { readAttachments } from './keyboard.js';
import { maxBotUser, messageId, type MaxMessage } from './objects.js';

export const MAX_TEXT_LIMIT = 4000;
const FORMATS = new Set(['markdown', 'html']);

export type Query = Record<string, string | undefined>;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An int64 query parameter: absent, a number, or an error naming the field. */
function idParam(query: Query, name: string): number | undefined | string {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  return /^-?\d+$/.test(raw) ? Number(raw) : `Field '${name}' value (${raw}) must be a number`;
}

function recipient(world: World, bot: MaxBot, query: Query): Chat | MaxError {
  const chatId = idParam(query, 'chat_id');
  const userId = idParam(query, 'user_id');
  if (typeof chatId === 'string') return mx.payload(chatId);
  if (typeof userId === 'string') return mx.payload(userId);
  if (chatId !== undefined) {
    const chat = bot.dialogs.get(chatId);
    if (!chat) return mx.chatNotFound(chatId);
    if (chat.person.deactivated || chat.status !== 'active') return mx.denied();
    return chat;
  }
  if (userId === undefined) return mx.payload('Either chat_id or user_id must be specified');
  const person = world.personByMaxId(userId);
  if (!person) return mx.chatNotFound(userId);
  const chat = person.chats.get(bot.id);
  // A bot writes to a person only after the person started it; a stopped or deleted dialog is "suspended".
  if (person.deactivated || !chat || chat.status !== 'active') return mx.denied();
  return chat;
}

/** `POST /messages?user_id=` or `?chat_id=`: the body is `NewMessageBody`; the recipient is only in the query. */
export function sendMessage(
  world: World,
  bot: MaxBot,
  query: Query,
  body: unknown,
): MaxResult<{ message: MaxMessage }> {
  if (!isObject(body)) return mx.payload('Request body must be a JSON object');
  const text = body.text ?? null;
  if (text !== null && typeof text !== 'string') return mx.payload("Field 'text' must be a string");
  if (text !== null && text.length > MAX_TEXT_LIMIT) {
    return mx.payload(`Field 'text' size (${text.length}) must be at most ${MAX_TEXT_LIMIT}`);
  }
  const format = body.format ?? null;
  if (format !== null && (typeof format !== 'string' || !FORMATS.has(format))) {
    const shown = typeof format === 'string' ? format : JSON.stringify(format);
    return mx.payload(`Field 'format' value (${shown}) must be one of: markdown, html`);
  }
  const buttons = readAttachments(body.attachments);
  if (!Array.isArray(buttons)) return buttons;
  const attachments = Array.isArray(body.attachments) ? (body.attachments as unknown[]) : [];
  if ((text === null || text.trim() === '') && attachments.length === 0) {
    return mx.payload('Message must have text or attachments');
  }

  const chat = recipient(world, bot, query);
  if ('body' in chat) return chat;
  const now = world.deps.now();
  const seq = chat.nextMessageNumber++;
  const mid = messageId(chat, seq);
  world.record(chat, {
    from: 'bot',
    messageId: mid,
    at: now,
    text: text ?? '',
    format: format ?? undefined,
    buttons,
  });
  return ok({
    message: {
      sender: maxBotUser(bot, now),
      recipient: { chat_id: chat.chatId, chat_type: 'dialog', user_id: chat.person.maxUserId },
      timestamp: now,
      body: { mid, seq, text, ...(attachments.length ? { attachments } : {}) },
    },
  });
}
