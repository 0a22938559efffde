import type { Logger } from '@mds/logging';
import type { SimulatorConfig } from './config.js';
import type { UpdateSignal } from './delivery/update-signal.js';
import type { Timers } from './delivery/timers.js';
import type { WebhookPusher } from './delivery/webhook-pusher.js';
import type { Faults } from './domain/faults.js';
import type { BucketSpec, RateLimiter } from './domain/rate-limit.js';
import type { RequestLog } from './domain/request-log.js';
import type { TelegramLimits } from './domain/telegram/send-message.js';
import type { World } from './domain/world.js';
import type { WebhookInspector } from './inspector/inspector.js';
import type { SimulatorMetrics } from './metrics.js';

/** What the HTTP adapters share: the world and the machinery around it. */
export interface SimulatorContext {
  world: World;
  limiter: RateLimiter;
  telegramLimits: TelegramLimits;
  maxLimit: BucketSpec;
  faults: Faults;
  requests: RequestLog;
  timers: Timers;
  signal: UpdateSignal;
  pusher: WebhookPusher;
  metrics: SimulatorMetrics;
  /** Stands in for companies' webhook endpoints in the sandbox. */
  inspector: WebhookInspector;
  now: () => number;
  logger: Logger;
  config: SimulatorConfig;
  /** Where clients and people reach this simulator, e.g. `http://127.0.0.1:8090`. */
  publicUrl: () => string;
}
