import { Bot, MaxError } from '@maxhub/max-bot-api';
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
import { factsOfUpdate } from './updates.js';

const UPDATE_TYPES = ['bot_started', 'bot_stopped', 'message_created'] as const;

/**
 * What a failed call comes to, with the bot's token kept out. The SDK sends it in the Authorization header
 * only, but an error message or cause (an answer's text, a proxy's complaint) may still echo it.
 */
function failureOf(error: unknown, token: string): AttemptResult {
  if (error instanceof MaxError)
    return classifySendFailure({
      status: error.status,
      code: redactSecrets(String(error.code), [token]),
      message: redactSecrets(String(error.description), [token]),
    });
  // No answer (network, timeout, abort), which may or may not mean no message.
  return noAnswer(scrubError(error, [token]));
}

/** The MAX Bot API through the official SDK's client (`new Bot(token).api`; no polling loop of its own). */
function createMaxProvider(o: ProviderSettings): MessengerProvider {
  const apiOf = clientPerToken((token) => new Bot(token, { clientOptions: { baseUrl: o.apiBase } }).api);

  return {
    messenger: o.definition.code,
    producer: o.definition.sender,
    // MAX's 30 requests/s per bot count every request, long polls included.
    pollsCountAgainstRate: true,
    webhookSecretHeader: 'x-max-bot-api-secret',

    async send(bot: BotCredentials, m: OutgoingMessage, signal: AbortSignal): Promise<AttemptResult> {
      try {
        // No `format`: plain text, never read as Markdown or HTML. Link buttons in rows as the catalogue says.
        const attachments =
          m.buttons.length > 0
            ? [
                {
                  type: 'inline_keyboard' as const,
                  payload: {
                    buttons: inRows(
                      m.buttons.map((b) => ({ type: 'link' as const, text: b.text, url: b.url })),
                      o.definition.buttonsPerRow,
                    ),
                  },
                },
              ]
            : [];
        const sent = await apiOf(bot).sendMessageToUser(Number(m.userId), m.text, {
          attachments,
          signal,
        });
        // MAX sometimes answers an error with HTTP 200: no message body means no message.
        const mid = (sent as { body?: { mid?: string } } | undefined)?.body?.mid;
        if (!mid) {
          const body = sent as unknown as { code?: string; message?: string } | undefined;
          return classifySendFailure({
            status: 200,
            code: redactSecrets(String(body?.code ?? 'unexpected.response'), [bot.token]),
            message: redactSecrets(String(body?.message ?? 'no message in the answer'), [bot.token]),
          });
        }
        return { kind: 'sent', providerMessageId: mid };
      } catch (error) {
        return failureOf(error, bot.token);
      }
    },

    async poll(bot, cursor, signal) {
      try {
        const page = await apiOf(bot).raw.subscriptions.getUpdates({
          ...(cursor !== undefined ? { marker: Number(cursor) } : {}),
          timeout: o.pollTimeoutS,
          types: UPDATE_TYPES.join(','),
          signal: AbortSignal.any([signal, AbortSignal.timeout((o.pollTimeoutS + 15) * 1000)]),
        });
        const { updates, marker } = page as { updates: unknown[]; marker?: number | null };
        return {
          facts: updates.flatMap(factsOfUpdate),
          cursor: marker === undefined || marker === null ? cursor : String(marker),
        };
      } catch (error) {
        const scrubbed = scrubError(error, [bot.token]);
        if (error instanceof MaxError) {
          if (error.status === 401) throw new PollError('unauthorized', scrubbed.message);
          if (error.status === 429) throw new PollError('rate-limited', scrubbed.message);
          throw new PollError('transient', scrubbed.message);
        }
        throw new PollError('transient', noAnswer(scrubbed).description);
      }
    },

    async subscribe(bot, url, secret) {
      try {
        // `{success: false, message}` (or an answer that is no JSON, which the SDK hands back as data) is a
        // refusal, not a subscription.
        const answer = (await apiOf(bot).subscribe(url, secret, [...UPDATE_TYPES])) as
          { success?: boolean; code?: string; message?: string } | undefined;
        if (answer?.success !== true)
          throw new Error(
            `the subscription was refused: ${answer?.code ?? ''} ${answer?.message ?? ''}`.trim(),
          );
      } catch (error) {
        throw scrubError(error, [bot.token, secret]);
      }
    },

    factsOfPush: (_bot, body) => factsOfUpdate(body),
  };
}

/** GET /me, the token in the Authorization header. */
function identifyMaxBot(token: string, o: { apiBase: string; signal: AbortSignal }): Promise<TokenAnswer> {
  const request = new Request(`${o.apiBase}/me`, { headers: { Authorization: token } });
  return identifyOverHttp('max', request, o.signal, (response, answer) => {
    const body = answer as
      { user_id?: number; username?: string; name?: string; message?: string } | undefined;
    if (response.ok && body?.user_id !== undefined)
      return {
        ok: true,
        bot: { providerBotId: String(body.user_id), username: String(body.username ?? body.name ?? '') },
      };
    if (response.status === 401 || response.status === 403)
      return {
        ok: false,
        reason: 'rejected',
        detail: `MAX refused the token: ${typeof body?.message === 'string' ? body.message : String(response.status)}`,
      };
    return undefined;
  });
}

export const maxProvider: ProviderFactory = {
  defaultApiBase: 'https://platform-api2.max.ru',
  // MAX: 30 requests/s per bot (official; update polls count); 2 messages/s per chat (community,
  // unconfirmed), so the per-chat default stays at that.
  senderDefaults: { httpPort: 8083, botRatePerSecond: 30, chatRatePerSecond: 2 },
  formerApiBaseSetting: 'MAX_API_BASE',
  create: createMaxProvider,
  identifyBot: identifyMaxBot,
};
