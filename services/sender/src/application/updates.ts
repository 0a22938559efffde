import { sealRecords } from '@mds/personal-data';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { topics } from '@mds/contracts';
import type { Logger } from '@mds/logging';
import { backoffMs } from '../domain/attempt.js';
import type { BotSummary, SenderParts } from './ports.js';
import { botUpdateEvent } from './events.js';
import { PollError, scrubError, type BotCredentials, type BotFact } from '@mds/messengers';
import { cleanCursor, cleanFact } from '../domain/outside-text.js';

export interface UpdateIngestionOptions extends SenderParts {
  mode: 'polling' | 'webhook' | 'off';
  /** Which delivery partition a bot's work goes to: its owner also reads its updates. */
  partitionOf(botId: string): number;
  /** Waits for a slot of the bot's request rate (MAX counts polls); resolves at once otherwise. */
  takeSlot(botId: string, partition: number, signal: AbortSignal): Promise<void>;
  refreshMs: number;
  publicUrl?: string | undefined;
  webhookSecret?: string | undefined;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

const WAIT_AFTER: Record<Exclude<PollError['kind'], 'transient'>, number> = {
  // Another poller (a replica taking over during a rebalance, or a stray process) holds the bot.
  conflict: 5_000,
  // The token was refused: the registry may get a new one; no point asking the messenger often.
  unauthorized: 60_000,
  'rate-limited': 5_000,
};

/**
 * Reads what people do with the bots this replica owns (the owner of a bot's delivery partition), by
 * long polling or by the messenger's webhook, and publishes it as bot-update events. A bot's cursor
 * (Telegram offset, MAX marker) is saved only after its facts are in Kafka, and each fact's event id
 * derives from the bot and the update, so a restart or a handover reads some updates twice but every
 * consumer counts them once.
 */
export function createUpdateIngestion(o: UpdateIngestionOptions): UpdateIngestion {
  return new UpdateIngestion(o);
}

export class UpdateIngestion {
  private readonly log: Logger;
  private readonly pollers = new Map<string, { abort: AbortController; done: Promise<void> }>();
  private readonly subscribed = new Set<string>();
  private owned = new Set<number>();
  private bots: BotSummary[] = [];
  private refreshTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly o: UpdateIngestionOptions) {
    this.log = o.logger.child({ component: 'updates' });
  }

  async start(): Promise<void> {
    if (this.o.mode === 'off') return;
    await this.refresh();
    const tick = () => {
      this.refreshTimer = setTimeout(
        () => void this.refresh().finally(() => !this.stopped && tick()),
        this.o.refreshMs,
      );
    };
    tick();
  }

  /** The delivery partitions this replica owns: it reads the updates of those partitions' bots. */
  assign(partitions: readonly number[]): void {
    this.owned = new Set(partitions);
    // Subscriptions are set again by whoever owns the bot after a rebalance (setting one is idempotent).
    if (this.o.mode === 'webhook') this.subscribed.clear();
    this.reconcile();
  }

  /** The header the messenger echoes the per-bot webhook secret in. */
  get webhookSecretHeader(): string {
    return this.o.provider.webhookSecretHeader;
  }

  /** Webhook mode only: whether a push names the bot's secret (compared in constant time). */
  acceptsSecret(botId: string, given: Buffer): boolean {
    const expected = Buffer.from(this.secretFor(botId));
    return this.o.mode === 'webhook' && given.length === expected.length && timingSafeEqual(given, expected);
  }

  /**
   * A push the messenger sent for a bot: its facts published (resolves once they are in Kafka, so a failure
   * makes the messenger push again); `unknown-bot` when the registry does not know the bot.
   */
  async receivePush(botId: string, body: unknown): Promise<'published' | 'unknown-bot'> {
    const bot = await this.o.directory.credentials(botId);
    if (!bot) return 'unknown-bot';
    await this.publishFacts(bot, this.o.provider.factsOfPush(bot, body));
    return 'published';
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.refreshTimer);
    const running = [...this.pollers.values()];
    for (const p of running) p.abort.abort();
    this.pollers.clear();
    await Promise.allSettled(running.map((p) => p.done));
  }

  private secretFor(botId: string): string {
    return createHmac('sha256', this.o.webhookSecret ?? '')
      .update(botId)
      .digest('base64url');
  }

  private async publishFacts(bot: BotCredentials, facts: BotFact[]): Promise<void> {
    if (facts.length === 0) return;
    const at = new Date();
    const { provider } = this.o;
    const records = await sealRecords(
      this.o.personKeys,
      facts.map((fact) => botUpdateEvent(bot, provider.messenger, cleanFact(fact), at, provider.producer)),
    );
    await this.o.publisher.publish(
      records.map((record) => ({ topic: topics.botUpdate, key: bot.botId, record })),
    );
    for (const fact of facts) this.o.metrics.updates.inc({ kind: fact.kind });
  }

  private async pollLoop(summary: BotSummary, signal: AbortSignal): Promise<void> {
    const { o } = this;
    const partition = o.partitionOf(summary.botId);
    let cursor: string | undefined;
    let failures = 0;
    let cursorRead = false;
    let token: string | undefined;
    while (!signal.aborted) {
      try {
        if (!cursorRead) {
          cursor = await o.journal.cursor(summary.botId);
          cursorRead = true;
        }
        const bot = await o.directory.credentials(summary.botId);
        if (!bot) return; // removed from the registry; the next refresh forgets it
        token = bot.token;
        if (o.provider.pollsCountAgainstRate) await o.takeSlot(bot.botId, partition, signal);
        if (signal.aborted) return;
        const page = await o.provider.poll(bot, cursor, signal);
        await this.publishFacts(bot, page.facts);
        const next = cleanCursor(page.cursor);
        if (next !== undefined && next !== cursor) {
          await o.journal.saveCursor(bot.botId, next);
          cursor = next;
        }
        failures = 0;
      } catch (error) {
        if (signal.aborted) return;
        const kind = error instanceof PollError ? error.kind : 'transient';
        o.metrics.pollFailures.inc({ kind });
        if (kind === 'unauthorized') o.directory.forget(summary.botId);
        failures++;
        const waitMs =
          kind === 'transient'
            ? backoffMs(failures, { baseMs: 1_000, maxMs: 30_000 }, Math.random())
            : WAIT_AFTER[kind];
        // The providers scrub their errors; this keeps any other failure path from logging the token, or a
        // messenger's megabyte of controls.
        const err = scrubError(error, token ? [token] : []);
        this.log.warn({ botId: summary.botId, err, kind, waitMs }, 'reading updates failed; waiting');
        await sleep(waitMs, signal);
      }
    }
  }

  private async subscribe(summary: BotSummary): Promise<void> {
    const bot = await this.o.directory.credentials(summary.botId);
    if (!bot) return;
    const url = `${this.o.publicUrl!.replace(/\/$/, '')}/updates/${bot.botId}`;
    const secret = this.secretFor(bot.botId);
    try {
      await this.o.provider.subscribe(bot, url, secret, AbortSignal.timeout(15_000));
    } catch (error) {
      // The providers scrub their errors; this keeps any provider's from logging the token or the secret.
      throw scrubError(error, [bot.token, secret]);
    }
    this.subscribed.add(bot.botId);
    this.log.info({ botId: bot.botId, url }, 'updates webhook set');
  }

  private reconcile(): void {
    if (this.stopped || this.o.mode === 'off') return;
    const mine = this.bots.filter((b) => this.owned.has(this.o.partitionOf(b.botId)));
    const wanted = new Set(mine.map((b) => b.botId));
    if (this.o.mode === 'polling') this.reconcilePollers(mine, wanted);
    else this.reconcileSubscriptions(mine, wanted);
  }

  private reconcilePollers(mine: BotSummary[], wanted: Set<string>): void {
    for (const [botId, poller] of this.pollers) {
      if (!wanted.has(botId)) {
        poller.abort.abort();
        this.pollers.delete(botId);
      }
    }
    for (const bot of mine) {
      if (this.pollers.has(bot.botId)) continue;
      const abort = new AbortController();
      const done = this.pollLoop(bot, abort.signal).finally(() => {
        if (this.pollers.get(bot.botId)?.abort === abort) this.pollers.delete(bot.botId);
      });
      this.pollers.set(bot.botId, { abort, done });
    }
    this.o.metrics.polledBots.set(this.pollers.size);
  }

  private reconcileSubscriptions(mine: BotSummary[], wanted: Set<string>): void {
    for (const botId of this.subscribed) if (!wanted.has(botId)) this.subscribed.delete(botId);
    for (const bot of mine) {
      if (this.subscribed.has(bot.botId)) continue;
      this.subscribe(bot).catch((error: unknown) =>
        this.log.warn({ botId: bot.botId, err: error }, 'could not set the updates webhook; will retry'),
      );
    }
  }

  private async refresh(): Promise<void> {
    try {
      this.bots = await this.o.directory.list();
      this.reconcile();
    } catch (error) {
      this.log.warn({ err: error }, 'could not list bots; keeping the last list');
    }
  }
}
