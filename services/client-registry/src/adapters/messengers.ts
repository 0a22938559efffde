import type { MessengerName } from '../domain/accounts.js';
import type { BotTokenChecker, TokenCheck } from '../application/ports.js';

export type { BotIdentity, TokenCheck } from '../application/ports.js';

export interface MessengerEndpoints {
  telegramApiRoot: string;
  maxApiBase: string;
  timeoutMs: number;
}

/** Asks the messenger who the token belongs to: Telegram getMe, MAX GET /me. */
const TELEGRAM_TOKEN = /^\d{1,20}:[\w-]{20,100}$/;

export async function checkBotToken(
  messenger: MessengerName,
  token: string,
  o: MessengerEndpoints,
): Promise<TokenCheck> {
  const check = await askMessenger(messenger, token, o);
  // The answer's text goes back to the caller and may be logged: a messenger (or a proxy) echoing the
  // token, as is or URL-encoded, must not carry it there.
  if (check.ok) return check;
  const detail = [token, encodeURIComponent(token)].reduce(
    (d, t) => d.split(t).join('[redacted]'),
    check.detail,
  );
  return { ...check, detail };
}

async function askMessenger(
  messenger: MessengerName,
  token: string,
  o: MessengerEndpoints,
): Promise<TokenCheck> {
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
      return { ok: true, bot: { providerBotId: String(result.id), username: result.username ?? '' } };
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
