import type { Response } from 'express';
import type { SimulatorContext } from '../context.js';
import { tg, type TelegramResult } from '../domain/telegram/errors.js';
import { takeUpdates, type PollRequest } from '../domain/telegram/get-updates.js';
import type { TelegramUpdate } from '../domain/telegram/objects.js';
import type { TelegramBot } from '../domain/types.js';

type EndReason = 'other-poll' | 'webhook';

interface PollSession {
  end(reason: EndReason): void;
}

/**
 * getUpdates long polling: one poller per bot. A newer call ends the one waiting with 409, as does
 * setting a webhook; a waiting call returns as soon as an update arrives.
 */
export class LongPolls {
  private readonly sessions = new Map<number, PollSession>();

  constructor(private readonly ctx: SimulatorContext) {}

  /** Ends the bot's waiting poll, if any (setWebhook). */
  endFor(botId: number, reason: EndReason): void {
    this.sessions.get(botId)?.end(reason);
  }

  async poll(
    bot: TelegramBot,
    request: PollRequest,
    res: Response,
  ): Promise<TelegramResult<TelegramUpdate[]> | undefined> {
    this.endFor(bot.id, 'other-poll');
    const { world, signal, timers } = this.ctx;
    let updates = takeUpdates(bot, request, world.deps.now());
    if (updates.length > 0 || request.timeoutS === 0) return { ok: true, result: updates };

    const aborted = new AbortController();
    let ended: EndReason | undefined;
    const session: PollSession = {
      end: (reason) => {
        ended = reason;
        aborted.abort();
      },
    };
    this.sessions.set(bot.id, session);
    let clientGone = false;
    const onClose = () => {
      clientGone = true;
      aborted.abort();
    };
    res.once('close', onClose);
    const deadline = Date.now() + request.timeoutS * 1000;
    try {
      while (updates.length === 0 && !aborted.signal.aborted && !timers.stopped && Date.now() < deadline) {
        await signal.wait(bot.id, deadline - Date.now(), aborted.signal);
        if (aborted.signal.aborted) break;
        if (bot.webhook) return tg.terminatedByWebhook();
        // The offset was applied already; read from it again without moving anything.
        updates = takeUpdates(bot, { ...request, allowedUpdates: undefined }, world.deps.now());
      }
    } finally {
      res.off('close', onClose);
      if (this.sessions.get(bot.id) === session) this.sessions.delete(bot.id);
    }
    if (ended === 'other-poll') return tg.otherGetUpdates();
    if (ended === 'webhook') return tg.terminatedByWebhook();
    if (clientGone) return undefined;
    return { ok: true, result: updates };
  }
}
