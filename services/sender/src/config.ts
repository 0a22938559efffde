import { databaseEnv, internalGrpcEnv, kafkaEnv, requireSasl, secret, serviceEnv, z } from '@mds/config';
import { messengerNamed, messengerNames, type MessengerDefinition } from '@mds/contracts';
import { providerOf, providers, requireProvider, type ProviderFactory } from '@mds/messengers';
import { personalDataEnv } from '@mds/personal-data';

const positiveInt = () => z.coerce.number().int().positive();

/**
 * Which messenger this deployment sends through: one of the catalogue (@mds/contracts), with a provider
 * (@mds/messengers). Read first, since the other settings' defaults are that messenger's.
 */
export const messengerEnv = {
  MESSENGER: z
    .string()
    .superRefine((name, ctx) => {
      if (!messengerNamed(name))
        ctx.addIssue({
          code: 'custom',
          message: `no messenger ${JSON.stringify(name)} in the catalogue (messengers: ${messengerNames().join(', ')})`,
        });
      else if (!providerOf(name))
        ctx.addIssue({ code: 'custom', message: `messenger ${name} has no provider in this build` });
    })
    .describe(
      "The messenger this deployment sends through, a name of the catalogue: one sender deployment per messenger (its defaults below are that messenger's).",
    ),
};

export const messengerSchema = z.object(messengerEnv);

/** The messenger of a MESSENGER already checked against the catalogue, and its provider. */
export function senderMessenger(name: string): { definition: MessengerDefinition; factory: ProviderFactory } {
  const definition = messengerNamed(name);
  if (!definition) throw new Error(`no messenger ${JSON.stringify(name)} in the catalogue`);
  return { definition, factory: requireProvider(name) };
}

/** The schema of a sender's journal: its deployment's name (`telegram-sender` keeps `telegram_sender`). */
export function senderSchemaName(definition: MessengerDefinition): string {
  return definition.sender.replaceAll('-', '_');
}

/** "unset: the messenger's own (<name> <value>, ...)", from the built-in providers' defaults. */
function messengersOwn(value: (factory: ProviderFactory) => string | number): string {
  const each = Object.entries(providers).map(([name, factory]) => `${name} ${value(factory)}`);
  return `unset: the messenger's own (${each.join(', ')})`;
}

/**
 * The settings of a sender deployment. Those whose default depends on the messenger (port, rates, bot API base
 * URL) are unset unless given; withMessengerDefaults fills them in from its provider.
 */
export const configSchema = z
  .object({ ...messengerEnv, ...senderEnv() })
  .superRefine(requireSasl)
  .superRefine(requireWebhookSettings);

export type Settings = z.infer<typeof configSchema>;

/** A sender's settings with its messenger's defaults filled in: what the sender runs with. */
export type SenderConfig = Settings & {
  HTTP_PORT: number;
  BOT_RATE_PER_SECOND: number;
  CHAT_RATE_PER_SECOND: number;
  MESSENGER_API_BASE: string;
};

export function withMessengerDefaults(
  settings: Settings,
  factory: Pick<ProviderFactory, 'defaultApiBase' | 'senderDefaults'>,
): SenderConfig {
  const defaults = factory.senderDefaults;
  return {
    ...settings,
    HTTP_PORT: settings.HTTP_PORT ?? defaults.httpPort,
    BOT_RATE_PER_SECOND: settings.BOT_RATE_PER_SECOND ?? defaults.botRatePerSecond,
    CHAT_RATE_PER_SECOND: settings.CHAT_RATE_PER_SECOND ?? defaults.chatRatePerSecond,
    MESSENGER_API_BASE: settings.MESSENGER_API_BASE ?? factory.defaultApiBase,
  };
}

/** What the one-shot deploy step (migrations and topics) needs: the messenger, Kafka and PostgreSQL. */
export const deployStepConfigSchema = z
  .object({ ...messengerEnv, LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;

/** The settings of every sender deployment. */
export function senderEnv() {
  return {
    ...serviceEnv,
    HTTP_PORT: z.coerce
      .number()
      .int()
      .min(0)
      .max(65_535)
      .optional()
      .describe(
        `Port of the ops endpoints and of the updates webhook (UPDATES_MODE=webhook); ${messengersOwn((f) => f.senderDefaults.httpPort)}.`,
      ),
    MESSENGER_API_BASE: z
      .url()
      .transform((url) => url.replace(/\/+$/, ''))
      .optional()
      .describe(
        `The messenger's bot API base URL (no trailing slash), e.g. the simulator; ${messengersOwn((f) => f.defaultApiBase)}.`,
      ),
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
      .optional()
      .describe(
        `Messages per second one bot sends at most (requests per second where the messenger counts update polls too); ${messengersOwn((f) => f.senderDefaults.botRatePerSecond)}.`,
      ),
    CHAT_RATE_PER_SECOND: z.coerce
      .number()
      .min(0)
      .optional()
      .describe(
        `Messages per second to one chat at most (0: no per-chat limit); ${messengersOwn((f) => f.senderDefaults.chatRatePerSecond)}.`,
      ),
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
