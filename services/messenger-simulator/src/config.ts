import { bool, loadConfig, port, serviceEnv, z } from '@mds/config';

const perSecond = (fallback: number) => z.coerce.number().positive().default(fallback);
const burst = (fallback: number) => z.coerce.number().int().min(1).default(fallback);

export const simulatorSchema = z.object({
  ...serviceEnv,
  HTTP_PORT: port(8090),
  /** Base URL people and clients reach the simulator at (links in the inbox, `api_root` of bots). */
  PUBLIC_URL: z.url({ protocol: /^https?$/ }).optional(),
  /** Off: no 429 from the rate limits (benchmarks); forced 429 faults still work. */
  RATE_LIMITS_ENABLED: bool(true),
  /** Telegram: messages per second per bot (FAQ: about 30) and the bucket size. */
  TELEGRAM_BOT_RATE_PER_S: perSecond(30),
  TELEGRAM_BOT_BURST: burst(30),
  /** Telegram: messages per second to one chat (FAQ: about 1) and the short burst it tolerates. */
  TELEGRAM_CHAT_RATE_PER_S: perSecond(1),
  TELEGRAM_CHAT_BURST: burst(3),
  /** MAX: requests per second per bot (documented: 30 rps) and the bucket size. */
  MAX_BOT_RATE_PER_S: perSecond(30),
  MAX_BOT_BURST: burst(30),
  /** Waits between webhook push attempts, comma-separated ms; the update is dropped after the last. */
  WEBHOOK_RETRY_DELAYS_MS: z
    .string()
    .default('200,1000,3000')
    .transform((v) => (v.trim() === '' ? [] : v.split(',').map((s) => Number(s.trim()))))
    .pipe(z.array(z.number().int().nonnegative()).max(20)),
  /** How long a webhook push may take. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Refuse plain-http webhooks like the real APIs (off by default: local receivers speak http). */
  WEBHOOK_REQUIRE_HTTPS: bool(false),
  /** How many recent bot API calls GET /control/requests can show (0: none). */
  REQUEST_LOG_SIZE: z.coerce.number().int().min(0).default(1000),
  /** Messages kept per chat. */
  CHAT_HISTORY_LIMIT: z.coerce.number().int().min(1).default(200),
  /** How long an unfetched update is kept (Telegram: 24 hours). */
  UPDATE_RETENTION_HOURS: z.coerce.number().positive().default(24),
  /**
   * An SQLite file to keep the whole simulated world in (bots, people, chats, update queues, webhooks,
   * faults, the inspector), saved as it changes and restored at start. Unset: kept in memory only.
   */
  STATE_FILE: z.string().trim().min(1).optional(),
});

export type SimulatorConfig = z.infer<typeof simulatorSchema>;

export function loadSimulatorConfig(env: NodeJS.ProcessEnv = process.env): SimulatorConfig {
  return loadConfig(simulatorSchema, env);
}
