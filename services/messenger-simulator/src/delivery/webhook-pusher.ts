import type { Logger } from '@mds/logging';
import type { Bot, MaxBot, TelegramBot } from '../domain/types.js';
import type { SimulatorMetrics } from '../metrics.js';
import type { Timers } from './timers.js';

export interface WebhookPusherOptions {
  timers: Timers;
  logger: Logger;
  metrics: SimulatorMetrics;
  now: () => number;
  /** Waits between attempts; after the last one the update is dropped. */
  retryDelaysMs: number[];
  /** How long one push may take before it counts as failed. */
  timeoutMs: number;
  /** Whether the bot still exists (a removed bot's pushes stop). */
  isLive: (bot: Bot) => boolean;
  /** Called after a push changed a bot (an update confirmed, a webhook error noted). */
  onChange: () => void;
}

type Attempt = { ok: true } | { ok: false; error: string; cancelled?: boolean };

/**
 * Pushes each bot's updates to its webhook (Telegram) or subscriptions (MAX), one update at a time, in
 * order, with the secret header. A failed push is retried after each configured delay; an update is
 * confirmed (removed from the queue) once delivered or given up on. Telegram counts any 2xx as
 * delivered; MAX wants exactly 200.
 */
export class WebhookPusher {
  private readonly running = new Set<number>();
  private readonly inFlight = new AbortController();

  constructor(private readonly o: WebhookPusherOptions) {}

  /** Starts delivering the bot's pending updates if it has a webhook and is not being served already. */
  kick(bot: Bot): void {
    if (this.running.has(bot.id) || this.o.timers.stopped) return;
    if (bot.messenger === 'telegram' ? !bot.webhook : bot.subscriptions.length === 0) return;
    this.running.add(bot.id);
    const loop = bot.messenger === 'telegram' ? this.telegramLoop(bot) : this.maxLoop(bot);
    loop
      .catch((error: unknown) =>
        this.o.logger.error({ err: error, botId: bot.id }, 'webhook push loop failed'),
      )
      .finally(() => {
        this.running.delete(bot.id);
        // An update may have arrived between the loop's last look and now.
        if (this.hasWork(bot)) this.kick(bot);
      });
  }

  private hasWork(bot: Bot): boolean {
    if (!this.o.isLive(bot)) return false;
    return bot.messenger === 'telegram'
      ? bot.webhook !== undefined && bot.updates.head() !== undefined
      : bot.subscriptions.length > 0 && bot.updates.first(bot.unreadFrom) !== undefined;
  }

  stop(): void {
    this.inFlight.abort();
  }

  private async telegramLoop(bot: TelegramBot): Promise<void> {
    while (!this.o.timers.stopped && this.o.isLive(bot)) {
      const hook = bot.webhook;
      const next = bot.updates.head();
      if (!hook || !next) return;
      const headers: Record<string, string> = hook.secretToken
        ? { 'X-Telegram-Bot-Api-Secret-Token': hook.secretToken }
        : {};
      await this.deliver(hook.url, headers, next.payload, 'telegram', {
        stillWanted: () => bot.webhook === hook,
        // getWebhookInfo reports the latest failed attempt, even when a retry then succeeded.
        onFailure: (error) => (bot.lastWebhookError = { at: this.o.now(), message: error }),
      });
      if (bot.webhook === hook) bot.updates.confirmBefore(next.id + 1);
      this.o.onChange();
    }
  }

  private async maxLoop(bot: MaxBot): Promise<void> {
    while (!this.o.timers.stopped && this.o.isLive(bot)) {
      const subscriptions = bot.subscriptions;
      const next = bot.updates.first(bot.unreadFrom);
      if (subscriptions.length === 0 || !next) return;
      const targets = subscriptions.filter(
        (s) => s.updateTypes.length === 0 || s.updateTypes.includes(next.type),
      );
      await Promise.all(
        targets.map((s) =>
          this.deliver(s.url, s.secret ? { 'X-Max-Bot-Api-Secret': s.secret } : {}, next.payload, 'max', {
            stillWanted: () => bot.subscriptions.includes(s),
            onFailure: () => {},
          }),
        ),
      );
      if (bot.subscriptions.length === 0) return;
      bot.unreadFrom = Math.max(bot.unreadFrom, next.id + 1);
      bot.updates.confirmBefore(next.id + 1);
      this.o.onChange();
    }
  }

  private async deliver(
    url: string,
    headers: Record<string, string>,
    payload: unknown,
    messenger: 'telegram' | 'max',
    o: { stillWanted: () => boolean; onFailure: (error: string) => void },
  ): Promise<Attempt> {
    const body = JSON.stringify(payload);
    let last: Attempt;
    for (let attempt = 0; ; attempt++) {
      if (this.o.timers.stopped || !o.stillWanted())
        return { ok: false, error: 'cancelled', cancelled: true };
      last = await this.post(url, { 'Content-Type': 'application/json', ...headers }, body, messenger);
      this.o.metrics.webhookPushes.inc({ messenger, outcome: last.ok ? 'delivered' : 'failed' });
      if (last.ok) return last;
      o.onFailure(last.error);
      const delay = this.o.retryDelaysMs[attempt];
      if (delay === undefined) break;
      await this.o.timers.sleep(delay);
    }
    this.o.logger.warn(
      { messenger, error: last.ok ? undefined : last.error },
      'webhook update dropped after retries',
    );
    return last;
  }

  private async post(
    url: string,
    headers: Record<string, string>,
    body: string,
    messenger: string,
  ): Promise<Attempt> {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.any([this.inFlight.signal, AbortSignal.timeout(this.o.timeoutMs)]),
      });
      await response.body?.cancel();
      const delivered =
        messenger === 'max' ? response.status === 200 : response.status >= 200 && response.status < 300;
      return delivered
        ? { ok: true }
        : { ok: false, error: `Wrong response from the webhook: ${response.status} ${response.statusText}` };
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      const name = (error as { name?: string }).name;
      const reason =
        cause === 'ECONNREFUSED'
          ? 'Connection refused'
          : name === 'TimeoutError'
            ? 'Read timeout expired'
            : String(error);
      return { ok: false, error: reason };
    }
  }
}
