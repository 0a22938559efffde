import { bool, loadConfig, port, serviceEnv, z } from '@mds/config';

const perSecond = (fallback: number) => z.coerce.number().positive().default(fallback);
const burst = (fallback: number) => z.coerce.number().int().min(1).default(fallback);

export const simulatorSchema = z.object({
  ...serviceEnv,
  HTTP_PORT: port(8090).describe(
    'The one port of everything: both Bot APIs, the inbox, the control API, the webhook inspector.',
  ),
  PUBLIC_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe('Base URL people and clients reach the simulator at (links in the inbox, `api_root` of bots).'),
  RATE_LIMITS_ENABLED: bool(true).describe(
    'Off: no 429 from the rate limits (benchmarks); forced 429 faults still work.',
  ),
  TELEGRAM_BOT_RATE_PER_S: perSecond(30).describe(
    'Telegram: messages per second per bot (FAQ: about 30) and the bucket size.',
  ),
  TELEGRAM_BOT_BURST: burst(30).describe("Telegram: bucket size of a bot's rate."),
  TELEGRAM_CHAT_RATE_PER_S: perSecond(1).describe(
    'Telegram: messages per second to one chat (FAQ: about 1) and the short burst it tolerates.',
  ),
  TELEGRAM_CHAT_BURST: burst(3).describe('Telegram: the short burst one chat tolerates.'),
  MAX_BOT_RATE_PER_S: perSecond(30).describe(
    'MAX: requests per second per bot (documented: 30 rps) and the bucket size.',
  ),
  MAX_BOT_BURST: burst(30).describe("MAX: bucket size of a bot's rate."),
  WEBHOOK_RETRY_DELAYS_MS: z
    .string()
    .default('200,1000,3000')
    .transform((v) => (v.trim() === '' ? [] : v.split(',').map((s) => Number(s.trim()))))
    .pipe(z.array(z.number().int().nonnegative()).max(20))
    .describe(
      'Waits between webhook push attempts, comma-separated ms; the update is dropped after the last.',
    ),
  WEBHOOK_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(10_000)
    .describe('How long a webhook push may take.'),
  WEBHOOK_REQUIRE_HTTPS: bool(false).describe(
    'Refuse plain-http webhooks like the real APIs (off by default: local receivers speak http).',
  ),
  REQUEST_LOG_SIZE: z.coerce
    .number()
    .int()
    .min(0)
    .default(1000)
    .describe('How many recent bot API calls GET /control/requests can show (0: none).'),
  CHAT_HISTORY_LIMIT: z.coerce.number().int().min(1).default(200).describe('Messages kept per chat.'),
  UPDATE_RETENTION_HOURS: z.coerce
    .number()
    .positive()
    .default(24)
    .describe('How long an unfetched update is kept (Telegram: 24 hours).'),
  STATE_FILE: z
    .string()
    .trim()
    .min(1)
    .optional()
    .describe(
      'An SQLite file to keep the whole simulated world in (bots, people, chats, update queues, webhooks, faults, the inspector), saved as it changes and restored at start. Unset: kept in memory only.',
    ),
});

export type SimulatorConfig = z.infer<typeof simulatorSchema>;

export function loadSimulatorConfig(env: NodeJS.ProcessEnv = process.env): SimulatorConfig {
  return loadConfig(simulatorSchema, env);
}
