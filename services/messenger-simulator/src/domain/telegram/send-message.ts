import type { BucketSpec, RateLimiter } from '../rate-limit.js';
import type { TelegramBot } from '../types.js';
import type { World } from '../world.js';
import { tg, type TelegramResult } from './errors.js';
import { parseReplyMarkup } from './keyboard.js';
import { botUser, privateChat, type TgMessage } from './objects.js';
import { chatIdParam, jsonParam, stringParam, type Params } from './params.js';

export const TELEGRAM_TEXT_LIMIT = 4096;
const PARSE_MODES = new Set(['html', 'markdown', 'markdownv2']);

export interface TelegramLimits {
  /** All messages of one bot (about 30 per second). */
  bot: BucketSpec;
  /** Messages to one chat (about 1 per second, short bursts tolerated). */
  chat: BucketSpec;
}

export interface TelegramSendContext {
  world: World;
  limiter: RateLimiter;
  limits: TelegramLimits;
}

/**
 * sendMessage, checked in the Bot API's order: parameters, then flood control, then the recipient.
 * Text is stored and echoed as sent: `parse_mode` is validated but the markup is not parsed.
 */
export function sendMessage(
  ctx: TelegramSendContext,
  bot: TelegramBot,
  params: Params,
): TelegramResult<TgMessage> {
  const chatRef = chatIdParam(params);
  if (!chatRef) return tg.chatIdEmpty();
  const text = stringParam(params, 'text');
  if (text === undefined || text.trim() === '') return tg.textEmpty();
  if (text.length > TELEGRAM_TEXT_LIMIT) return tg.tooLong();
  const parseMode = stringParam(params, 'parse_mode') || undefined;
  if (parseMode !== undefined && !PARSE_MODES.has(parseMode.toLowerCase())) return tg.unsupportedParseMode();
  const rawMarkup = jsonParam(params, 'reply_markup');
  if (rawMarkup === 'invalid') return tg.markupNotJson();
  const markup = rawMarkup === undefined ? undefined : parseReplyMarkup(rawMarkup.value);
  if (markup && 'ok' in markup) return markup;

  const now = ctx.world.deps.now();
  const chatKey = chatRef.kind === 'id' ? String(chatRef.id) : chatRef.username;
  const waitMs = ctx.limiter.take(now, [
    { key: `tg:bot:${bot.id}`, spec: ctx.limits.bot },
    { key: `tg:chat:${bot.id}:${chatKey}`, spec: ctx.limits.chat },
  ]);
  if (waitMs > 0) return tg.tooManyRequests(Math.max(1, Math.ceil(waitMs / 1000)));

  // A private chat is addressed by the user's id; `@username` names only channels and groups.
  if (chatRef.kind !== 'id') return tg.chatNotFound();
  const person = ctx.world.personByTelegramId(chatRef.id);
  if (!person) return tg.chatNotFound();
  if (person.deactivated) return tg.deactivated();
  const chat = person.chats.get(bot.id);
  if (!chat) return tg.cantInitiate();
  if (chat.status === 'blocked') return tg.blocked();

  const messageId = chat.nextMessageNumber++;
  if (markup?.kind === 'reply') chat.replyKeyboard = markup.rows;
  if (markup?.kind === 'remove') chat.replyKeyboard = undefined;
  ctx.world.record(chat, {
    from: 'bot',
    messageId,
    at: now,
    text,
    format: parseMode,
    buttons: markup?.kind === 'inline' ? markup.rows : [],
    replyKeyboard: markup?.kind === 'reply' ? markup.rows : undefined,
  });
  const linkPreview = jsonParam(params, 'link_preview_options');
  return {
    ok: true,
    result: {
      message_id: messageId,
      from: botUser(bot),
      chat: privateChat(person),
      date: Math.floor(now / 1000),
      text,
      ...(markup?.kind === 'inline' ? { reply_markup: markup.wire } : {}),
      ...(linkPreview && linkPreview !== 'invalid' ? { link_preview_options: linkPreview.value } : {}),
    },
  };
}
