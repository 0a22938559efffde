import { isErased, openRecords, SealedDataError } from '@mds/personal-data';
import { messageErrorCodes, type CleanText } from '@mds/contracts';
import type { AttemptResult } from '../../domain/attempt.js';
import { cleanAnswer } from '../../domain/outside-text.js';
import type { Item, Lane } from '../lanes.js';
import type { BotCredentials } from '@mds/messengers';
import type { AttemptContext } from './context.js';

/**
 * The delivery's text and buttons, opened with the person's key. A forgotten person's message fails
 * (CLIENT_FORGOTTEN) instead of being sent empty; a key that cannot be had now is a transient failure.
 */
export async function opened(
  c: AttemptContext,
  item: Item,
): Promise<{ ok: true; value: Item['request']['event']['value'] } | { ok: false; result: AttemptResult }> {
  let request: Item['request'];
  try {
    [request] = (await openRecords(c.personKeys, [item.request])) as [Item['request']];
  } catch (error) {
    if (error instanceof SealedDataError)
      return { ok: false, result: { kind: 'rejected', code: 'INVALID_MESSAGE', description: error.message } };
    return {
      ok: false,
      result: { kind: 'transient', description: `person key unavailable: ${(error as Error).message}` },
    };
  }
  if (isErased(request.event.value))
    return {
      ok: false,
      result: { kind: 'rejected', code: 'CLIENT_FORGOTTEN', description: messageErrorCodes.CLIENT_FORGOTTEN },
    };
  return { ok: true, value: request.event.value };
}

/** One call of the messenger for a message, its answer cleaned of what the messenger may have put in it. */
export async function send(
  c: AttemptContext,
  lane: Lane,
  bot: BotCredentials,
  item: Item,
): Promise<AttemptResult<CleanText>> {
  const open = await opened(c, item);
  if (!open.ok) return cleanAnswer(open.result);
  const d = open.value;
  const message = {
    chatId: d.chat?.chatId ?? '',
    userId: d.chat?.userId ?? '',
    text: d.text,
    buttons: d.buttons,
  };
  const started = performance.now();
  let result = await c.provider.send(bot, message, AbortSignal.timeout(c.sendTimeoutMs));
  if (result.kind === 'unauthorized') {
    // The token may have been replaced in the registry since it was cached: one more try with a fresh one.
    c.directory.forget(lane.botId);
    const fresh = await c.directory.credentials(lane.botId).catch(() => undefined);
    if (fresh && fresh.token !== bot.token)
      result = await c.provider.send(fresh, message, AbortSignal.timeout(c.sendTimeoutMs));
  }
  c.metrics.providerSeconds.observe({ result: result.kind }, (performance.now() - started) / 1000);
  return cleanAnswer(result);
}
