import type { Express } from 'express';
import type { Logger } from '@mds/logging';
import type { Registry } from 'prom-client';
import type { SimulatorConfig } from './config.js';
import type { SimulatorContext } from './context.js';
import { controlRouter } from './control/router.js';
import { Timers } from './delivery/timers.js';
import { UpdateSignal } from './delivery/update-signal.js';
import { WebhookPusher } from './delivery/webhook-pusher.js';
import { Faults } from './domain/faults.js';
import { RateLimiter } from './domain/rate-limit.js';
import { RequestLog } from './domain/request-log.js';
import type { WorldDeps } from './domain/types.js';
import { World } from './domain/world.js';
import { saveBeforeAnswer } from './http/save-before-answer.js';
import { inboxRouter } from './inbox/router.js';
import { WebhookInspector } from './inspector/inspector.js';
import { inspectorRouter } from './inspector/router.js';
import { maxRouter } from './max/router.js';
import { simulatorMetrics } from './metrics.js';
import { restoreAndTrack } from './persistence/persistence.js';
import type { SimulatorStore } from './persistence/store.js';
import { telegramRouter } from './telegram/router.js';

export interface SimulatorOptions {
  config: SimulatorConfig;
  logger: Logger;
  registry: Registry;
  deps: WorldDeps;
  publicUrl: () => string;
  /** Where the world is kept across restarts; in memory only when absent. */
  store?: SimulatorStore | undefined;
}

export interface Simulator {
  readonly world: World;
  readonly context: SimulatorContext;
  /** Adds the Telegram, MAX, control, webhook inspector and inbox routes to an app (after its ops routes). */
  mount(app: Express): void;
  /**
   * Ends long polls, held calls and webhook pushes, and resolves once every call in progress has been
   * answered (and the store, if any, has the last of it and is closed), so the HTTP server can then
   * close its (now idle) connections at once.
   */
  stop(): Promise<void>;
}

export function createSimulator(o: SimulatorOptions): Simulator {
  const { config } = o;
  const world = new World(o.deps, {
    updateRetentionMs: config.UPDATE_RETENTION_HOURS * 3_600_000,
    chatHistoryLimit: config.CHAT_HISTORY_LIMIT,
  });
  const faults = new Faults();
  const inspector = new WebhookInspector();
  const persistence = o.store && restoreAndTrack(o.store, { world, faults, inspector }, o.logger);
  const timers = new Timers();
  const metrics = simulatorMetrics(o.registry);
  const pusher = new WebhookPusher({
    timers,
    logger: o.logger,
    metrics,
    now: o.deps.now,
    retryDelaysMs: config.WEBHOOK_RETRY_DELAYS_MS,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    isLive: (bot) => world.bots.get(bot.id) === bot,
    onChange: () => persistence?.saveOrLog(),
  });
  const signal = new UpdateSignal(timers);
  world.onUpdates = (bot) => {
    signal.notify(bot.id);
    pusher.kick(bot);
  };
  const context: SimulatorContext = {
    world,
    limiter: new RateLimiter(config.RATE_LIMITS_ENABLED),
    telegramLimits: {
      bot: { ratePerS: config.TELEGRAM_BOT_RATE_PER_S, burst: config.TELEGRAM_BOT_BURST },
      chat: { ratePerS: config.TELEGRAM_CHAT_RATE_PER_S, burst: config.TELEGRAM_CHAT_BURST },
    },
    maxLimit: { ratePerS: config.MAX_BOT_RATE_PER_S, burst: config.MAX_BOT_BURST },
    faults,
    requests: new RequestLog(config.REQUEST_LOG_SIZE),
    timers,
    signal,
    pusher,
    metrics,
    inspector,
    now: o.deps.now,
    logger: o.logger,
    config,
    publicUrl: o.publicUrl,
  };
  // Restored bots with webhooks get the updates they had pending.
  for (const bot of world.bots.values()) pusher.kick(bot);
  let inFlight = 0;
  let drained: (() => void) | undefined;
  return {
    world,
    context,
    mount(app) {
      app.use((_req, res, next) => {
        inFlight++;
        res.once('close', () => {
          if (--inFlight === 0) drained?.();
        });
        next();
      });
      if (persistence) app.use(saveBeforeAnswer(() => persistence.save(), o.logger));
      app.use(telegramRouter(context));
      app.use(maxRouter(context));
      app.use('/control', controlRouter(context));
      app.use(inspectorRouter(context));
      app.use(inboxRouter(context));
    },
    async stop() {
      timers.stop();
      pusher.stop();
      if (inFlight > 0) {
        let giveUp: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          drained = resolve;
          giveUp = setTimeout(resolve, 2000);
        });
        clearTimeout(giveUp);
      }
      persistence?.close();
    },
  };
}
