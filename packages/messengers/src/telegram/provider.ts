import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Api, GrammyError } from 'grammy';
import type { Update } from 'grammy/types';
import type { AttemptResult } from '../attempt-result.js';
import { inRows } from '../buttons.js';
import { noAnswer } from '../no-answer.js';
import {
  clientPerToken,
  identifyOverHttp,
  PollError,
  type BotCredentials,
  type MessengerProvider,
  type OutgoingMessage,
  type ProviderFactory,
  type ProviderSettings,
  type TokenAnswer,
} from '../provider.js';
import { redactSecrets, scrubError } from '../scrub.js';
import { classifySendFailure } from './classify.js';
import { factsOfUpdate, nextOffset } from './updates.js';

const ALLOWED_UPDATES = ['message', 'my_chat_member'] as const;

/** A numeric chat id as a number (what the Bot API documents), anything else as given. */
function chatIdOf(chatId: string): number | string {
  const n = Number(chatId);
  return Number.isSafeInteger(n) ? n : chatId;
}

/** grammY types its signal parameter with the abort-controller polyfill's class; Node's is the same at runtime. */
const grammySignal = (signal: AbortSignal) => signal as unknown as Parameters<Api['getMe']>[0];

/**
 * What a failed call comes to, with the bot's token kept out: grammY's HttpError wraps node-fetch's error,
 * whose message is the request URL (`/bot<token>/method`), and a GrammyError carries the call's payload.
 */
function failureOf(error: unknown, token: string): AttemptResult {
  if (error instanceof GrammyError)
    return classifySendFailure({
      error_code: error.error_code,
      description: redactSecrets(error.description, [token]),
      parameters: error.parameters,
    });
  // grammY's HttpError (network, timeout, abort): no answer, which may or may not mean no message.
  return noAnswer(scrubError(error, [token]));
}

/** The Telegram Bot API through grammY's Api client (one per bot token). */
function createTelegramProvider(o: ProviderSettings): MessengerProvider {
  // grammY's node-fetch sends `Connection: close` unless given an agent: keep connections open instead.
  const agents = {
    'http:': new HttpAgent({ keepAlive: true, maxSockets: 256 }),
    'https:': new HttpsAgent({ keepAlive: true, maxSockets: 256 }),
  };
  const agent = (url: URL) => (url.protocol === 'http:' ? agents['http:'] : agents['https:']);
  // Our own signals bound every call; grammY's own timeout is only a backstop.
  const apiOf = clientPerToken(
    (token) =>
      new Api(token, { apiRoot: o.apiBase, timeoutSeconds: 120, baseFetchConfig: { agent } as never }),
  );

  return {
    messenger: o.definition.code,
    producer: o.definition.sender,
    pollsCountAgainstRate: false,
    webhookSecretHeader: 'x-telegram-bot-api-secret-token',

    async send(bot: BotCredentials, m: OutgoingMessage, signal: AbortSignal): Promise<AttemptResult> {
      try {
        // No parse_mode: the text goes out exactly as written, never read as Markdown or HTML.
        const sent = await apiOf(bot).sendMessage(
          chatIdOf(m.chatId),
          m.text,
          m.buttons.length > 0
            ? {
                reply_markup: {
                  inline_keyboard: inRows(
                    m.buttons.map((b) => ({ text: b.text, url: b.url })),
                    o.definition.buttonsPerRow,
                  ),
                },
              }
            : {},
          grammySignal(signal),
        );
        return { kind: 'sent', providerMessageId: String(sent.message_id) };
      } catch (error) {
        return failureOf(error, bot.token);
      }
    },

    async poll(bot, cursor, signal) {
      const api = apiOf(bot);
      let updates: Update[];
      try {
        updates = await api.getUpdates(
          {
            ...(cursor !== undefined ? { offset: Number(cursor) } : {}),
            timeout: o.pollTimeoutS,
            allowed_updates: [...ALLOWED_UPDATES],
          },
          grammySignal(AbortSignal.any([signal, AbortSignal.timeout((o.pollTimeoutS + 15) * 1000)])),
        );
      } catch (error) {
        if (!(error instanceof GrammyError))
          throw new PollError('transient', noAnswer(scrubError(error, [bot.token])).description);
        const description = redactSecrets(error.description, [bot.token]);
        if (error.error_code === 409 && /webhook is active/i.test(description)) {
          // Polling is the configured mode: take the bot back from a webhook an earlier mode left set.
          await api
            .deleteWebhook({ drop_pending_updates: false }, grammySignal(signal))
            .catch(() => undefined);
          return { facts: [], cursor };
        }
        if (error.error_code === 409) throw new PollError('conflict', description);
        if (error.error_code === 401 || error.error_code === 404)
          throw new PollError('unauthorized', description);
        if (error.error_code === 429) throw new PollError('rate-limited', description);
        throw new PollError('transient', `${error.error_code}: ${description}`);
      }
      return { facts: updates.flatMap(factsOfUpdate), cursor: nextOffset(updates, cursor) };
    },

    async subscribe(bot, url, secret, signal) {
      try {
        await apiOf(bot).setWebhook(
          url,
          { secret_token: secret, allowed_updates: [...ALLOWED_UPDATES] },
          grammySignal(signal),
        );
      } catch (error) {
        throw scrubError(error, [bot.token, secret]);
      }
    },

    factsOfPush: (_bot, body) => factsOfUpdate(body as Update),

    close() {
      agents['http:'].destroy();
      agents['https:'].destroy();
    },
  };
}

const TELEGRAM_TOKEN = /^\d{1,20}:[\w-]{20,100}$/;

/** getMe: the token goes into the URL path, so anything but the documented shape is refused unasked. */
async function identifyTelegramBot(
  token: string,
  o: { apiBase: string; signal: AbortSignal },
): Promise<TokenAnswer> {
  if (!TELEGRAM_TOKEN.test(token))
    return { ok: false, reason: 'rejected', detail: 'a Telegram bot token looks like 123456789:AAF...' };
  return identifyOverHttp(
    'telegram',
    new Request(`${o.apiBase}/bot${token}/getMe`),
    o.signal,
    (response, body) => {
      const result = body?.result as { id?: number; username?: string } | undefined;
      if (response.ok && body?.ok === true && result?.id)
        return {
          ok: true,
          bot: { providerBotId: String(result.id), username: String(result.username ?? '') },
        };
      if (response.status === 401 || response.status === 404)
        return {
          ok: false,
          reason: 'rejected',
          detail: `Telegram refused the token: ${typeof body?.description === 'string' ? body.description : String(response.status)}`,
        };
      return undefined;
    },
  );
}

export const telegramProvider: ProviderFactory = {
  defaultApiBase: 'https://api.telegram.org',
  senderDefaults: { httpPort: 8082, botRatePerSecond: 30, chatRatePerSecond: 1 },
  formerApiBaseSetting: 'TELEGRAM_API_ROOT',
  create: createTelegramProvider,
  identifyBot: identifyTelegramBot,
};
