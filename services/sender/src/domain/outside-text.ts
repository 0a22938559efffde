import { cleanText, type CleanText } from '@mds/contracts';
import type { AttemptResult } from './attempt.js';
import type { BotFact } from '@mds/messengers';

// What every messenger adapter hands the shared mechanism comes from outside: an error's description, a message
// id, an update's ids, a cursor. It is cleaned here, once for every messenger, before anything is decided,
// logged, stored or put into an event (@mds/contracts' cleanText: valid UTF-8, U+FFFD for NUL, controls, lone
// surrogates and non-characters, bounded). The event builders take only the cleaned forms.

/** A messenger's error description, as a message's failure carries it (Telegram's are under 200 characters). */
export const DESCRIPTION_CHARS = 1_000;
/** A description the sender composes around one (`...; last error: <description>`). */
export const OUTCOME_DESCRIPTION_CHARS = 2_000;
/** An id a messenger gives (message, chat, user, update) or a cursor: numbers or short tokens. */
export const ID_CHARS = 256;

/** A provider's answer with its texts cleaned. */
export function cleanAnswer(result: AttemptResult): AttemptResult<CleanText> {
  if (result.kind === 'sent')
    return { ...result, providerMessageId: cleanText(result.providerMessageId, ID_CHARS) };
  return { ...result, description: cleanText(result.description, DESCRIPTION_CHARS) };
}

/** A fact read from a bot's updates with its ids cleaned. */
export function cleanFact(fact: BotFact): BotFact<CleanText> {
  const ids = {
    chatId: cleanText(fact.chatId, ID_CHARS),
    userId: cleanText(fact.userId, ID_CHARS),
    updateId: cleanText(fact.updateId, ID_CHARS),
  };
  return fact.kind === 'contact-shared'
    ? { ...fact, ...ids, phone: cleanText(fact.phone, ID_CHARS) }
    : { ...fact, ...ids };
}

/** Where a bot's next poll starts (Telegram offset, MAX marker), cleaned before it is stored. */
export function cleanCursor(cursor: string | undefined): CleanText | undefined {
  return cursor === undefined ? undefined : cleanText(cursor, ID_CHARS);
}
