// JSON shapes of the control API (snake_case, like the bot APIs it sits beside).
import type { Fault } from '../domain/faults.js';
import type { Delivery } from '../inspector/inspector.js';
import type { LoggedRequest } from '../domain/request-log.js';
import type { Bot, ButtonView, Chat, ChatEntry, Person } from '../domain/types.js';

const iso = (ms: number) => new Date(ms).toISOString();

export function botView(bot: Bot, publicUrl: string) {
  const common = {
    id: bot.id,
    messenger: bot.messenger,
    username: bot.username,
    name: bot.name,
    token: bot.token,
    /** grammY `apiRoot` / MAX SDK `baseUrl`. */
    api_root: publicUrl,
    pending_updates: bot.updates.size,
    created_at: iso(bot.createdAt),
  };
  if (bot.messenger === 'telegram') {
    return {
      ...common,
      webhook: bot.webhook
        ? {
            url: bot.webhook.url,
            last_error: bot.lastWebhookError
              ? { at: iso(bot.lastWebhookError.at), message: bot.lastWebhookError.message }
              : null,
          }
        : null,
    };
  }
  return {
    ...common,
    subscriptions: bot.subscriptions.map((s) => ({ url: s.url, update_types: s.updateTypes, time: s.time })),
  };
}

function chatSummary(chat: Chat) {
  return {
    bot_id: chat.bot.id,
    messenger: chat.bot.messenger,
    bot_username: chat.bot.username,
    chat_id: chat.chatId,
    status: chat.status,
    received: chat.transcript.filter((e) => e.from === 'bot').length,
  };
}

export function personView(person: Person) {
  return {
    id: person.id,
    phone_number: person.phone,
    first_name: person.firstName,
    last_name: person.lastName ?? null,
    username: person.username ?? null,
    language_code: person.languageCode,
    deactivated: person.deactivated,
    telegram_user_id: person.telegramUserId,
    max_user_id: person.maxUserId,
    created_at: iso(person.createdAt),
    chats: [...person.chats.values()].map(chatSummary),
  };
}

function buttonsView(rows: ButtonView[][]) {
  return rows.map((row) =>
    row.map((b) => ({ text: b.text, ...(b.url ? { url: b.url } : {}), ...(b.kind ? { type: b.kind } : {}) })),
  );
}

/** One message a bot sent to the person, as the person sees it. */
export function receivedView(chat: Chat, entry: ChatEntry) {
  return {
    messenger: chat.bot.messenger,
    bot_id: chat.bot.id,
    bot_username: chat.bot.username,
    chat_id: chat.chatId,
    message_id: entry.messageId ?? null,
    date: iso(entry.at),
    text: entry.text,
    format: entry.format ?? null,
    buttons: buttonsView(entry.buttons),
    ...(entry.replyKeyboard ? { reply_keyboard: buttonsView(entry.replyKeyboard) } : {}),
  };
}

export function faultView(fault: Fault) {
  return {
    id: fault.id,
    kind: fault.kind,
    messenger: fault.messenger ?? null,
    bot_token: fault.token ?? null,
    method: fault.method ?? null,
    remaining: fault.remaining,
    ms: fault.ms ?? null,
    status: fault.status ?? null,
    retry_after: fault.retryAfter ?? null,
    hostile: fault.hostile ?? null,
    size: fault.size ?? null,
  };
}

export function requestView(entry: LoggedRequest) {
  return {
    at: iso(entry.at),
    messenger: entry.messenger,
    bot_id: entry.botId ?? null,
    method: entry.method,
    params: entry.params,
    status: entry.status,
    error: entry.error ?? null,
  };
}

/** A webhook delivery the inspector received, newest first in lists. */
export function deliveryView(delivery: Delivery) {
  return {
    seq: delivery.seq,
    received_at: iso(delivery.receivedAt),
    webhook_id: delivery.webhookId ?? null,
    type: delivery.type ?? null,
    event_id: delivery.eventId ?? null,
    state: delivery.state ?? null,
    error_code: delivery.errorCode ?? null,
    error_description: delivery.errorDescription ?? null,
    verified: delivery.verified,
    reason: delivery.reason,
    detail: delivery.detail,
    method: delivery.method,
    headers: delivery.headers,
    /** The body parsed as JSON; null when it is not JSON (then see `raw_body`). */
    body: delivery.json ?? null,
    raw_body: delivery.body,
  };
}

export function inspectorView(name: string, secrets: number, latest: number, publicUrl: string) {
  return {
    name,
    secrets,
    latest_seq: latest,
    hooks_url: `${publicUrl}/inspector/${encodeURIComponent(name)}/hooks`,
    page_url: `${publicUrl}/inspector/${encodeURIComponent(name)}`,
  };
}
