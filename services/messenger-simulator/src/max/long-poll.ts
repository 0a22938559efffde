import type { Response } from 'express';
import type { SimulatorContext } from '../context.js';
import { ok, type MaxResult } from '../domain/max/errors.js';
import type { MaxUpdate } from '../domain/max/objects.js';
import { takeUpdates, type MaxPollRequest } from '../domain/max/updates-api.js';
import type { MaxBot } from '../domain/types.js';

type Answer = { updates: MaxUpdate[]; marker: number };

/**
 * GET /updates: answers at once when something is pending, otherwise waits up to `timeout` seconds for
 * an update. While the bot has a webhook subscription long polling gets nothing: updates go to the
 * webhook and the call just waits out its timeout.
 */
export async function pollMax(
  ctx: SimulatorContext,
  bot: MaxBot,
  request: MaxPollRequest,
  res: Response,
): Promise<MaxResult<Answer> | undefined> {
  const { world, signal, timers } = ctx;
  const aborted = new AbortController();
  let clientGone = false;
  const onClose = () => {
    clientGone = true;
    aborted.abort();
  };
  res.once('close', onClose);
  const deadline = Date.now() + request.timeoutS * 1000;
  try {
    if (bot.subscriptions.length > 0) {
      await timers.sleep(request.timeoutS * 1000, aborted.signal);
      return clientGone ? undefined : ok({ updates: [], marker: request.marker ?? bot.unreadFrom });
    }
    let answer = takeUpdates(bot, request, world.deps.now());
    while (answer.updates.length === 0 && !timers.stopped && Date.now() < deadline && !clientGone) {
      await signal.wait(bot.id, deadline - Date.now(), aborted.signal);
      if (clientGone || bot.subscriptions.length > 0) break;
      answer = takeUpdates(bot, request, world.deps.now());
    }
    return clientGone ? undefined : ok(answer);
  } finally {
    res.off('close', onClose);
  }
}
