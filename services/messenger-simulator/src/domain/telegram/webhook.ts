import type { TelegramBot } from '../types.js';
import { tg, type TelegramResult } from './errors.js';
import { readAllowedUpdates } from './get-updates.js';
import { boolParam, intParam, stringParam, type Params } from './params.js';

const SECRET_TOKEN = /^[A-Za-z0-9_-]{1,256}$/;

export interface WebhookRules {
  /** The real API refuses plain http; the simulator allows it unless told otherwise (loopback tests). */
  requireHttps: boolean;
}

export function deleteWebhook(bot: TelegramBot, params: Params): TelegramResult<true> {
  const had = bot.webhook !== undefined;
  bot.webhook = undefined;
  bot.lastWebhookError = undefined;
  if (boolParam(params, 'drop_pending_updates')) bot.updates.clear();
  return { ok: true, result: true, description: had ? 'Webhook was deleted' : 'Webhook is already deleted' };
}

/** setWebhook; an empty `url` removes the webhook, as the Bot API allows. */
export function setWebhook(bot: TelegramBot, params: Params, rules: WebhookRules): TelegramResult<true> {
  const url = stringParam(params, 'url')?.trim() ?? '';
  if (url === '') return deleteWebhook(bot, params);
  const parsed = URL.parse(url);
  const allowed = rules.requireHttps ? ['https:'] : ['https:', 'http:'];
  if (!parsed || !allowed.includes(parsed.protocol)) return tg.webhookNeedsHttps();
  const secretToken = stringParam(params, 'secret_token') || undefined;
  if (secretToken !== undefined && !SECRET_TOKEN.test(secretToken)) return tg.secretTokenChars();
  const maxConnections = intParam(params, 'max_connections') ?? 40;
  if (maxConnections < 1 || maxConnections > 100) return tg.maxConnections();
  const allowedUpdates = readAllowedUpdates(params);
  if (allowedUpdates && 'ok' in allowedUpdates) return allowedUpdates;

  const unchanged = bot.webhook?.url === url && bot.webhook.secretToken === secretToken;
  if (allowedUpdates) bot.allowedUpdates = allowedUpdates;
  if (boolParam(params, 'drop_pending_updates')) bot.updates.clear();
  if (!unchanged) {
    bot.webhook = { url, secretToken, maxConnections };
    bot.lastWebhookError = undefined;
  }
  return { ok: true, result: true, description: unchanged ? 'Webhook is already set' : 'Webhook was set' };
}

/** getWebhookInfo: `url` is empty while the bot polls. */
export function webhookInfo(bot: TelegramBot) {
  const hook = bot.webhook;
  return {
    url: hook?.url ?? '',
    has_custom_certificate: false,
    pending_update_count: bot.updates.size,
    ...(hook ? { max_connections: hook.maxConnections } : {}),
    ...(hook && bot.allowedUpdates ? { allowed_updates: [...bot.allowedUpdates] } : {}),
    ...(bot.lastWebhookError
      ? {
          last_error_date: Math.floor(bot.lastWebhookError.at / 1000),
          last_error_message: bot.lastWebhookError.message,
        }
      : {}),
  };
}
