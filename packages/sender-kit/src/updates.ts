import { createHmac, timingSafeEqual } from 'node:crypto';
import { topics } from '@mds/contracts';
import type { EventPublisher } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import express, { type Router } from 'express';
import { backoffMs } from './domain/attempt.js';
import type { BotFact } from './domain/bot-facts.js';
import type { BotDirectory, BotSummary } from './directory.js';
import { botUpdateEvent } from './events.js';
import type { Journal } from './journal.js';
import type { SenderMetrics } from './metrics.js';
import { PollError, type BotCredentials, type MessengerProvider } from './provider.js';

export interface UpdateIngestionOptions {
  provider: MessengerProvider;
  journal: Journal;
  directory: BotDirectory;
  publisher: EventPublisher;
  logger: Logger;
  metrics: SenderMetrics;
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
export function createUpdateIngestion(o: UpdateIngestionOptions) {
  const log = o.logger.child({ component: 'updates' });
  const pollers = new Map<string, { abort: AbortController; done: Promise<void> }>();
  const subscribed = new Set<string>();
  let owned = new Set<number>();
  let bots: BotSummary[] = [];
  let refreshTimer: NodeJS.Timeout | undefined;
  let stopped = false;

  const secretFor = (botId: string) =>
    createHmac('sha256', o.webhookSecret ?? '')
      .update(botId)
      .digest('base64url');

  async function publishFacts(bot: BotCredentials, facts: BotFact[]): Promise<void> {
    if (facts.length === 0) return;
    const at = new Date();
    await o.publisher.publish(
      facts.map((fact) => ({
        topic: topics.botUpdate,
        key: bot.botId,
        record: botUpdateEvent(bot, o.provider.messenger, fact, at, o.provider.producer),
      })),
    );
    for (const fact of facts) o.metrics.updates.inc({ kind: fact.kind });
  }

  async function pollLoop(summary: BotSummary, signal: AbortSignal): Promise<void> {
    const partition = o.partitionOf(summary.botId);
    let cursor: string | undefined;
    let failures = 0;
    let cursorRead = false;
    while (!signal.aborted) {
      try {
        if (!cursorRead) {
          cursor = await o.journal.cursor(summary.botId);
          cursorRead = true;
        }
        const bot = await o.directory.credentials(summary.botId);
        if (!bot) return; // removed from the registry; the next refresh forgets it
        if (o.provider.pollsCountAgainstRate) await o.takeSlot(bot.botId, partition, signal);
        if (signal.aborted) return;
        const page = await o.provider.poll(bot, cursor, signal);
        await publishFacts(bot, page.facts);
        if (page.cursor !== undefined && page.cursor !== cursor) {
          await o.journal.saveCursor(bot.botId, page.cursor);
          cursor = page.cursor;
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
        log.warn({ botId: summary.botId, err: error, kind, waitMs }, 'reading updates failed; waiting');
        await sleep(waitMs, signal);
      }
    }
  }

  async function subscribe(summary: BotSummary): Promise<void> {
    const bot = await o.directory.credentials(summary.botId);
    if (!bot) return;
    const url = `${o.publicUrl!.replace(/\/$/, '')}/updates/${bot.botId}`;
    await o.provider.subscribe(bot, url, secretFor(bot.botId), AbortSignal.timeout(15_000));
    subscribed.add(bot.botId);
    log.info({ botId: bot.botId, url }, 'updates webhook set');
  }

  function reconcile(): void {
    if (stopped || o.mode === 'off') return;
    const mine = bots.filter((b) => owned.has(o.partitionOf(b.botId)));
    const wanted = new Set(mine.map((b) => b.botId));
    if (o.mode === 'polling') {
      for (const [botId, poller] of pollers) {
        if (!wanted.has(botId)) {
          poller.abort.abort();
          pollers.delete(botId);
        }
      }
      for (const bot of mine) {
        if (pollers.has(bot.botId)) continue;
        const abort = new AbortController();
        const done = pollLoop(bot, abort.signal).finally(() => {
          if (pollers.get(bot.botId)?.abort === abort) pollers.delete(bot.botId);
        });
        pollers.set(bot.botId, { abort, done });
      }
      o.metrics.polledBots.set(pollers.size);
    } else {
      for (const botId of subscribed) if (!wanted.has(botId)) subscribed.delete(botId);
      for (const bot of mine) {
        if (subscribed.has(bot.botId)) continue;
        subscribe(bot).catch((error: unknown) =>
          log.warn({ botId: bot.botId, err: error }, 'could not set the updates webhook; will retry'),
        );
      }
    }
  }

  async function refresh(): Promise<void> {
    try {
      bots = await o.directory.list();
      reconcile();
    } catch (error) {
      log.warn({ err: error }, 'could not list bots; keeping the last list');
    }
  }

  return {
    async start(): Promise<void> {
      if (o.mode === 'off') return;
      await refresh();
      const tick = () => {
        refreshTimer = setTimeout(() => void refresh().finally(() => !stopped && tick()), o.refreshMs);
      };
      tick();
    },

    /** The delivery partitions this replica owns: it reads the updates of those partitions' bots. */
    assign(partitions: readonly number[]): void {
      owned = new Set(partitions);
      // Subscriptions are set again by whoever owns the bot after a rebalance (setting one is idempotent).
      if (o.mode === 'webhook') subscribed.clear();
      reconcile();
    },

    /** Webhook mode: POST /updates/:botId, checked by the per-bot secret the messenger echoes. */
    router(): Router {
      const router = express.Router();
      router.post('/updates/:botId', express.json({ limit: '1mb' }), async (req, res, next) => {
        try {
          const botId = req.params.botId;
          const given = Buffer.from(req.get(o.provider.webhookSecretHeader) ?? '');
          const expected = Buffer.from(secretFor(botId));
          if (o.mode !== 'webhook' || given.length !== expected.length || !timingSafeEqual(given, expected)) {
            res.status(401).json({ error: 'wrong secret' });
            return;
          }
          const bot = await o.directory.credentials(botId);
          if (!bot) {
            res.status(404).json({ error: 'unknown bot' });
            return;
          }
          // Answered only after the facts are in Kafka: a failure here makes the messenger push again.
          await publishFacts(bot, o.provider.factsOfPush(bot, req.body));
          res.status(200).json({ ok: true });
        } catch (error) {
          next(error);
        }
      });
      return router;
    },

    async stop(): Promise<void> {
      stopped = true;
      clearTimeout(refreshTimer);
      const running = [...pollers.values()];
      for (const p of running) p.abort.abort();
      pollers.clear();
      await Promise.allSettled(running.map((p) => p.done));
    },
  };
}
