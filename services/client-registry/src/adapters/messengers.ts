import { cleanText } from '@mds/contracts';
import { providerOf } from '@mds/messengers';
import type { MessengerName } from '../domain/accounts.js';
import type { BotTokenChecker, TokenCheck } from '../application/ports.js';

export type { BotIdentity, TokenCheck } from '../application/ports.js';

export interface MessengerEndpoints {
  /** A messenger's bot API base URL where tokens are checked; a messenger not named: its provider's default. */
  apiBases: Readonly<Partial<Record<MessengerName, string>>>;
  timeoutMs: number;
}

/** How much of the messenger's words a refusal keeps; its ids and names are short. */
const DETAIL_CHARS = 500;
const ID_CHARS = 64;
const NAME_CHARS = 256;

/**
 * Asks the messenger's provider (@mds/messengers) who the token belongs to (Telegram getMe, MAX GET /me). What
 * it says comes back cleaned (@mds/contracts' cleanText: no NUL, controls, lone surrogates or non-characters,
 * bounded): its bot id and username go into BotRegistered and the registry's rows, a refusal's words to the
 * caller and the logs.
 */
export async function checkBotToken(
  messenger: MessengerName,
  token: string,
  o: MessengerEndpoints,
): Promise<TokenCheck> {
  const provider = providerOf(messenger);
  if (!provider)
    return {
      ok: false,
      reason: 'unreachable',
      detail: cleanText(`no provider for messenger ${messenger} in this client-registry`, DETAIL_CHARS),
    };
  const answer = await provider.identifyBot(token, {
    apiBase: o.apiBases[messenger] ?? provider.defaultApiBase,
    signal: AbortSignal.timeout(o.timeoutMs),
  });
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

/** The token checker the application uses, asking the messengers at these endpoints. */
export function messengerTokenChecker(o: MessengerEndpoints): BotTokenChecker {
  return (messenger, token) => checkBotToken(messenger, token, o);
}
