import { databaseEnv, internalGrpcEnv, kafkaEnv, secret, serviceEnv, z } from '@mds/config';
import { personalDataEnv } from '@mds/personal-data';

const positiveInt = () => z.coerce.number().int().positive();

/**
 * The settings both senders share; each service adds its provider's base URL and its own defaults for
 * the rates (see senderEnv's callers).
 */
export function senderEnv(defaults: { botRatePerSecond: number; chatRatePerSecond: number; port: number }) {
  return {
    ...serviceEnv,
    HTTP_PORT: z.coerce
      .number()
      .int()
      .min(0)
      .max(65_535)
      .default(defaults.port)
      .describe('Port of the ops endpoints and of the updates webhook (UPDATES_MODE=webhook).'),
    ...kafkaEnv,
    ...databaseEnv,
    ...internalGrpcEnv,
    REGISTRY_GRPC_ADDRESS: z
      .string()
      .default('127.0.0.1:50051')
      .describe("client-registry's gRPC address (bot tokens and the list of bots)."),
    BOT_RATE_PER_SECOND: z.coerce
      .number()
      .positive()
      .default(defaults.botRatePerSecond)
      .describe(
        'Messages per second one bot sends at most (requests per second for MAX, update polls included).',
      ),
    CHAT_RATE_PER_SECOND: z.coerce
      .number()
      .min(0)
      .default(defaults.chatRatePerSecond)
      .describe('Messages per second to one chat at most (0: no per-chat limit).'),
    BOT_CONCURRENCY: positiveInt()
      .default(32)
      .describe(
        'Messages of one bot in progress at once (journal writes and the call; its rate still applies).',
      ),
    SEND_TIMEOUT_MS: positiveInt()
      .default(15_000)
      .describe('How long one provider call may take before it counts as a timeout.'),
    UNCONFIRMED_SENDS: z
      .enum(['fail', 'retry'])
      .default('fail')
      .describe(
        'A call that may have reached the messenger and got no answer (a timeout, a connection reset after the request was written): `fail` it as DELIVERY_UNCONFIRMED (never a duplicate; the default), or `retry` it like a transient failure (never a loss, now and then a duplicate).',
      ),
    RETRY_BASE_MS: positiveInt()
      .default(1_000)
      .describe(
        'Backoff after the first transient failure; doubles per failure (full jitter) up to the max.',
      ),
    RETRY_MAX_MS: positiveInt()
      .default(60_000)
      .describe('Longest backoff between two attempts of a transient failure.'),
    QUEUE_WINDOW_PER_BOT: positiveInt()
      .default(2_000)
      .describe('Deliveries of one bot held in memory; the rest wait in PostgreSQL until these are done.'),
    JOURNAL_RETENTION_DAYS: positiveInt()
      .default(14)
      .describe(
        'How long a finished delivery is remembered (redelivered requests are recognised within it).',
      ),
    UPDATES_MODE: z
      .enum(['polling', 'webhook', 'off'])
      .default('polling')
      .describe(
        '`polling` (getUpdates / GET /updates) or `webhook` (the messenger pushes to UPDATES_PUBLIC_URL).',
      ),
    UPDATES_PUBLIC_URL: z
      .url()
      .optional()
      .describe(
        "Webhook mode: this service's public base URL; bots' updates arrive at <url>/updates/<bot_id>.",
      ),
    UPDATES_WEBHOOK_SECRET: secret(z.string().min(16).optional()).describe(
      "Webhook mode: the secret each bot's webhook secret is derived from (HMAC per bot).",
    ),
    UPDATES_POLL_TIMEOUT_S: z.coerce
      .number()
      .int()
      .min(0)
      .max(90)
      .default(25)
      .describe('Long-poll wait, seconds.'),
    BOTS_REFRESH_MS: positiveInt()
      .default(5_000)
      .describe('How often the list of bots is read again from client-registry.'),
    ...personalDataEnv,
  };
}

export function requireWebhookSettings(
  config: {
    UPDATES_MODE: string;
    UPDATES_PUBLIC_URL?: string | undefined;
    UPDATES_WEBHOOK_SECRET?: string | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  if (config.UPDATES_MODE !== 'webhook') return;
  for (const name of ['UPDATES_PUBLIC_URL', 'UPDATES_WEBHOOK_SECRET'] as const) {
    if (!config[name])
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: `UPDATES_MODE is webhook, so ${name} is required`,
      });
  }
}

export type SenderConfig = z.infer<z.ZodObject<ReturnType<typeof senderEnv>>>;
