import { CallerListError, parseCallerList } from '@mds/grpc';
import {
  bool,
  dashboardIdentityEnv,
  databaseEnv,
  kafkaEnv,
  port,
  requireSasl,
  secret,
  serviceEnv,
  z,
} from '@mds/config';
import { apiBaseSetting, messengers, type MessengerName } from '@mds/contracts';
import { providerOf } from '@mds/messengers';
import { personalDataEnv, retentionDays } from '@mds/personal-data';

/**
 * Per messenger of the catalogue, the setting naming its bot API base URL where bot tokens are checked
 * (TELEGRAM_API_ROOT, MAX_API_BASE: the catalogue's apiBaseSetting), its provider's default when unset. Their
 * names are not known to the type: tokenCheckApiBases reads them.
 */
function apiBaseEnv(): Record<never, never> {
  return Object.fromEntries(
    messengers().map((m) => {
      const provider = providerOf(m.name);
      const url = provider ? z.url().default(provider.defaultApiBase) : z.url().optional();
      return [
        apiBaseSetting(m),
        url.describe(
          `${m.label} Bot API base URL where bot tokens are checked: the real API, or the simulator.`,
        ),
      ];
    }),
  );
}

export const configSchema = z
  .object({
    ...serviceEnv,
    HTTP_PORT: port(8081).describe('Port of the admin API (/admin/v1) and the ops endpoints.'),
    ...kafkaEnv,
    ...databaseEnv,
    GRPC_PORT: port(50051).describe(
      'gRPC for the other services: API key -> company, bot credentials, webhook endpoints.',
    ),
    GRPC_HOST: z
      .string()
      .optional()
      .describe(
        "Address the gRPC service listens on; unset, HTTP_HOST's (npm start and the tests set 127.0.0.1: nothing listens beyond the machine).",
      ),
    REGISTRY_CALLERS: z
      .string()
      .optional()
      .describe(
        `Who may call the gRPC API: "<caller>:<sha256 hex of its token>" entries (comma or line separated), callers gateway, ${messengers()
          .map((m) => m.sender)
          .join(
            ', ',
          )}, webhook-dispatcher; each may call only its RPCs (see REGISTRY_CALLER_RPCS). Two entries for one caller during a token rotation.`,
      ),
    REGISTRY_CALLERS_FILE: z
      .string()
      .min(1)
      .optional()
      .describe(
        'The file REGISTRY_CALLERS is read from; re-read while serving, so a rotation needs no restart.',
      ),
    INTERNAL_GRPC_TOKEN: secret(z.string().min(16, 'use at least 16 characters').optional()).describe(
      'Development only: one token that may call every RPC (what every caller sends as INTERNAL_GRPC_TOKEN). Used when REGISTRY_CALLERS is unset; the chart never sets it.',
    ),
    GRPC_TLS_CERT_FILE: z
      .string()
      .min(1)
      .optional()
      .describe('TLS of the gRPC port: certificate and key files, re-read when they change.'),
    GRPC_TLS_KEY_FILE: z
      .string()
      .min(1)
      .optional()
      .describe('TLS of the gRPC port: the key of GRPC_TLS_CERT_FILE, re-read when it changes.'),
    GRPC_TLS_CLIENT_CA_FILE: z
      .string()
      .min(1)
      .optional()
      .describe(
        "CA of the callers' client certificates: set, every caller must present one it signed (mutual TLS).",
      ),
    GRPC_FILES_RELOAD_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(10_000)
      .describe('How often the TLS and caller files are checked for changes.'),
    REGISTRY_REQUIRE_CALLERS: bool(false).describe(
      'Refuse to start without REGISTRY_CALLERS (production: no shared development token).',
    ),
    REGISTRY_ADMIN_TOKEN: secret(z.string().min(16, 'use at least 16 characters')).describe(
      'Bearer token of the admin API (/admin/v1).',
    ),
    ...dashboardIdentityEnv,
    REGISTRY_ENCRYPTION_KEYS: secret(z.string().min(1)).describe(
      'AES-256-GCM keys sealing bot tokens and webhook secrets: "id:base64(32 bytes)[,older...]"; the first seals.',
    ),
    ...apiBaseEnv(),
    TOKEN_CHECK_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(5_000)
      .describe('How long a bot token check (getMe, GET /me) may take.'),
    WEBHOOK_SECRET_OVERLAP_HOURS: z.coerce
      .number()
      .positive()
      .default(24)
      .describe('How long a rotated-out webhook secret keeps signing beside the new one.'),
    MESSAGE_DELIVERY_DEADLINE_SECONDS: z.coerce
      .number()
      .int()
      .positive()
      .default(3_600)
      .describe(
        'How long the senders keep trying a message before failing it (DeliveryRequested.deliver_before).',
      ),
    ...personalDataEnv,
    RETENTION_PROCESSED_EVENTS_DAYS: retentionDays(30).describe(
      'Days the links consumer remembers which events it applied (a record redelivered later than this would be applied again; Kafka redelivers within minutes of a crash). 0: for ever.',
    ),
  })
  .superRefine(requireSasl)
  .superRefine((config, ctx) => {
    if (config.REGISTRY_CALLERS !== undefined) {
      try {
        parseCallerList(config.REGISTRY_CALLERS, registryCallerNames());
      } catch (error) {
        if (!(error instanceof CallerListError)) throw error;
        ctx.addIssue({ code: 'custom', path: ['REGISTRY_CALLERS'], message: error.message });
      }
    } else if (config.REGISTRY_REQUIRE_CALLERS || !config.INTERNAL_GRPC_TOKEN) {
      ctx.addIssue({
        code: 'custom',
        path: ['REGISTRY_CALLERS'],
        message: config.REGISTRY_REQUIRE_CALLERS
          ? 'required (REGISTRY_REQUIRE_CALLERS is set)'
          : 'set REGISTRY_CALLERS (or REGISTRY_CALLERS_FILE); INTERNAL_GRPC_TOKEN is for development only',
      });
    }
    if (Boolean(config.GRPC_TLS_CERT_FILE) !== Boolean(config.GRPC_TLS_KEY_FILE)) {
      ctx.addIssue({
        code: 'custom',
        path: ['GRPC_TLS_CERT_FILE'],
        message: 'set both GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE',
      });
    }
    if (config.GRPC_TLS_CLIENT_CA_FILE && !config.GRPC_TLS_CERT_FILE) {
      ctx.addIssue({
        code: 'custom',
        path: ['GRPC_TLS_CLIENT_CA_FILE'],
        message: 'mutual TLS needs the server certificate too (GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE)',
      });
    }
  });

const SENDER_RPCS = ['getBotCredentials', 'listBots', 'obtainPersonKey', 'getPersonKey'] as const;

/**
 * REGISTRY_CALLER_RPCS: the RPCs (method names of the service implementation) each caller may call. The gateway
 * resolves API keys (and lists their ids), the senders (one per messenger of the catalogue, by its deployment
 * name) read bot credentials and lists, the dispatcher reads and disables webhook endpoints. People's keys
 * (docs/personal-data.md): those that seal (gateway, senders: shared contacts) obtain them, those that open (and
 * the dashboard, for its read models) get them. Read when the service starts, after any plugin registered its
 * messenger.
 */
export function registryCallerRpcs(): Readonly<Record<string, readonly string[]>> {
  return {
    gateway: ['resolveApiKey', 'listApiKeyIds', 'obtainPersonKey', 'getPersonKey'],
    ...Object.fromEntries(messengers().map((m) => [m.sender, SENDER_RPCS])),
    'webhook-dispatcher': [
      'getWebhookEndpoint',
      'listWebhookEndpoints',
      'disableWebhookEndpoint',
      'getPersonKey',
    ],
    dashboard: ['getPersonKey'],
  };
}

export function registryCallerNames(): string[] {
  return Object.keys(registryCallerRpcs());
}

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;

/** mds-registry-rebuild: the deploy step's settings, and the keys that open the people's keys. */
export const rebuildConfigSchema = z
  .object({
    LOG_LEVEL: serviceEnv.LOG_LEVEL,
    ...kafkaEnv,
    ...databaseEnv,
    REGISTRY_ENCRYPTION_KEYS: secret(z.string().min(1)),
  })
  .superRefine(requireSasl);

/** Each messenger's bot API base URL where its tokens are checked, as the settings say (apiBaseEnv). */
export function tokenCheckApiBases(config: Config): Partial<Record<MessengerName, string>> {
  const settings = config as unknown as Record<string, unknown>;
  return Object.fromEntries(
    messengers().flatMap((m) => {
      const value = settings[apiBaseSetting(m)];
      return typeof value === 'string' ? [[m.name, value]] : [];
    }),
  );
}
