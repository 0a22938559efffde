import { cleanText } from '@mds/contracts';
import type { MessengerName } from '../domain/accounts.js';
import type { BotTokenChecker, TokenCheck } from '../application/ports.js';

export type { BotIdentity, TokenCheck } from '../application/ports.js';

export interface MessengerEndpoints {
  telegramApiRoot: string;
  maxApiBase: string;
  timeoutMs: number;
}

const TELEGRAM_TOKEN = /^\d{1,20}:[\w-]{20,100}$/;

/** How much of the messenger's words a refusal keeps; its ids and names are short. */
const DETAIL_CHARS = 500;
const ID_CHARS = 64;
const NAME_CHARS = 256;

/** What the messenger answered, as it said it: outside text, not yet cleaned. */
type Answer =
  | { ok: true; bot: { providerBotId: string; username: string } }
  | { ok: false; reason: 'rejected' | 'unreachable'; detail: string };

/**
 * Asks the messenger who the token belongs to (Telegram getMe, MAX GET /me). What it says comes back cleaned
 * (@mds/contracts' cleanText: no NUL, controls, lone surrogates or non-characters, bounded): its bot id and
 * username go into BotRegistered and the registry's rows, a refusal's words to the caller and the logs.
 */
export async function checkBotToken(
  messenger: MessengerName,
  token: string,
  o: MessengerEndpoints,
): Promise<TokenCheck> {
  const answer = await askMessenger(messenger, token, o);
  if (answer.ok) {
    return {
      ok: true,
      bot: {
        providerBotId: cleanText(answer.bot.providerBotId, ID_CHARS),
        username: cleanText(answer.bot.username, NAME_CHARS),
      },
    };
  }
  // A messenger (or a proxy) echoing the token, as is or URL-encoded, must not carry it to the caller or the
  // logs: redacted before the words are cut to their bound, so no part of it is left.
  const detail = [token, encodeURIComponent(token)].reduce(
    (d, t) => d.split(t).join('[redacted]'),
    answer.detail,
  );
  return { ...answer, detail: cleanText(detail, DETAIL_CHARS) };
}

async function askMessenger(messenger: MessengerName, token: string, o: MessengerEndpoints): Promise<Answer> {
  // The token goes into the URL path: anything but the documented shape is refused before any request.
  if (messenger === 'telegram' && !TELEGRAM_TOKEN.test(token)) {
    return { ok: false, reason: 'rejected', detail: 'a Telegram bot token looks like 123456789:AAF...' };
  }
  const request =
    messenger === 'telegram'
      ? new Request(`${o.telegramApiRoot}/bot${token}/getMe`)
      : new Request(`${o.maxApiBase}/me`, { headers: { Authorization: token } });
  let response: Response;
  try {
    response = await fetch(request, { signal: AbortSignal.timeout(o.timeoutMs) });
  } catch (error) {
    return {
      ok: false,
      reason: 'unreachable',
      detail: `${messenger} did not answer: ${(error as Error).message}`,
    };
  }
  const body = (await response.json().catch(() => undefined)) as
    | {
        ok?: boolean;
        description?: string;
        result?: { id?: number; username?: string };
        user_id?: number;
        username?: string;
        name?: string;
        message?: string;
      }
    | undefined;
  if (messenger === 'telegram') {
    const result = body?.result;
    if (response.ok && body?.ok === true && result?.id) {
      return { ok: true, bot: { providerBotId: String(result.id), username: String(result.username ?? '') } };
    }
    if (response.status === 401 || response.status === 404) {
      return {
        ok: false,
        reason: 'rejected',
        detail: `Telegram refused the token: ${body?.description ?? String(response.status)}`,
      };
    }
  } else {
    if (response.ok && body?.user_id !== undefined) {
      return {
        ok: true,
        bot: { providerBotId: String(body.user_id), username: String(body.username ?? body.name ?? '') },
      };
    }
    if (response.status === 401 || response.status === 403) {
      return {
        ok: false,
        reason: 'rejected',
        detail: `MAX refused the token: ${body?.message ?? String(response.status)}`,
      };
    }
  }
  return { ok: false, reason: 'unreachable', detail: `${messenger} answered ${response.status}` };
}

/** The token checker the application uses, asking the messengers at these endpoints. */
export function messengerTokenChecker(o: MessengerEndpoints): BotTokenChecker {
  return (messenger, token) => checkBotToken(messenger, token, o);
}
