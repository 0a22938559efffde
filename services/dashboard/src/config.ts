import {
  bool,
  databaseEnv,
  internalGrpcEnv,
  kafkaEnv,
  port,
  requireSasl,
  secret,
  serviceEnv,
  trustProxy,
  z,
} from '@mds/config';
import { personalDataEnv, retentionDays } from '@mds/personal-data';

const serviceUrl = (fallback: string) => z.url({ protocol: /^https?$/ }).default(fallback);

export const configSchema = z
  .object({
    ...serviceEnv,
    HTTP_PORT: port(8085).describe(
      'Port of the web application and its API (/api): the one to expose (through your Ingress).',
    ),
    OPERATOR_PORT: port(8086).describe(
      "Port of the operator's API (/admin/v1: a company's first owner, reset links), apart from the public one.",
    ),
    OPERATOR_HOST: z
      .string()
      .default('127.0.0.1')
      .describe(
        "Address OPERATOR_PORT listens on: loopback unless told (the chart sets 0.0.0.0 and exposes it only through the release's Service, inside the cluster).",
      ),
    TRUST_PROXY: trustProxy.describe(
      "Express's `trust proxy`, for the client address sign-in limits count: unset, the socket's address (X-Forwarded-For ignored); set it to the proxies in front of the dashboard (a hop count such as `1`, or addresses/CIDRs/`loopback`, comma separated).",
    ),
    ...kafkaEnv,
    ...databaseEnv,
    REGISTRY_URL: serviceUrl('http://127.0.0.1:8081').describe(
      "client-registry's admin API (keys, webhook, bots, clients), acted on for the member's company only.",
    ),
    DISPATCHER_URL: serviceUrl('http://127.0.0.1:8084').describe(
      "webhook-dispatcher's admin API (deliveries, resend, recover, test events), acted on for the member's company only.",
    ),
    DASHBOARD_SIGNING_KEY: secret(
      z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'an Ed25519 private key: 43 base64url characters (a JWK "d")'),
    ).describe(
      'The dashboard\'s identity towards client-registry, webhook-dispatcher and the gateway: an Ed25519 private key (a JWK "d"). Each call carries an assertion it signs for the signed-in member\'s company, valid 60 s; those services verify it with the public key (DASHBOARD_PUBLIC_KEYS) and let it act for that company only.',
    ),
    GATEWAY_URL: serviceUrl('http://127.0.0.1:8080').describe(
      "The public API: sends and phone changes go through it as the signed-in member (the dashboard's assertion; the gateway needs DASHBOARD_PUBLIC_KEYS), never with a pasted API key.",
    ),
    DASHBOARD_ADMIN_TOKEN: secret(z.string().min(16, 'use at least 16 characters')).describe(
      "Bearer token of the dashboard's own operator API (/admin/v1 on OPERATOR_PORT: first owner, reset links).",
    ),
    PUBLIC_URL: z
      .url({ protocol: /^https?$/ })
      .default('http://127.0.0.1:8085')
      .describe('Where people open the dashboard: one-time links are made with it.'),
    COOKIE_SECURE: bool(false).describe(
      'Session cookies carry Secure and the __Host- prefix (on for anything served over https).',
    ),
    SESSION_IDLE_MINUTES: z.coerce
      .number()
      .int()
      .positive()
      .default(120)
      .describe('A session ends after this long without a request, and after SESSION_MAX_HOURS in any case.'),
    SESSION_MAX_HOURS: z.coerce
      .number()
      .int()
      .positive()
      .default(24 * 7)
      .describe('A session ends this long after sign-in, however active.'),
    SIGN_IN_FREE_FAILURES: z.coerce
      .number()
      .int()
      .positive()
      .default(5)
      .describe(
        'Failed sign-ins in a row one email may have (member or not) before each further attempt waits: 1 s, doubling, up to SIGN_IN_MAX_DELAY_SECONDS. Never a hard lock; the right password, once let through, starts the count again.',
      ),
    SIGN_IN_MAX_DELAY_SECONDS: z.coerce
      .number()
      .int()
      .positive()
      .default(900)
      .describe('The longest wait between sign-in attempts for one email after repeated failures.'),
    SIGN_IN_PER_ADDRESS_PER_MINUTE: z.coerce
      .number()
      .int()
      .positive()
      .default(20)
      .describe('Sign-in attempts per client address per minute, whatever the email.'),
    ONE_TIME_LINK_HOURS: z.coerce
      .number()
      .int()
      .positive()
      .default(72)
      .describe('How long an invitation or password reset link works.'),
    LIVE_REFRESH_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(2_000)
      .describe("How often pages that show live data ask again (the browser's polling interval)."),
    WEB_ROOT: z
      .string()
      .optional()
      .describe('The built web application (index.html and assets); unset: dist/web beside the server.'),
    REGISTRY_GRPC_ADDRESS: z
      .string()
      .default('127.0.0.1:50051')
      .describe(
        "client-registry's gRPC (person keys: the pages show the numbers and texts sealed in events). Without a token the dashboard shows none of them (its read models keep them empty).",
      ),
    ...internalGrpcEnv,
    INTERNAL_GRPC_TOKEN: secret(z.string().min(16, 'use at least 16 characters').optional()).describe(
      "The dashboard's token for client-registry's gRPC (person keys); unset, no phone numbers or texts are shown.",
    ),
    ...personalDataEnv,
    RETENTION_MESSAGES_DAYS: retentionDays(90).describe(
      "Days a message's or request's row and timeline are kept after it (0: for ever).",
    ),
    RETENTION_MINUTES_DAYS: retentionDays(400).describe(
      "Days the per-minute counts behind the overview's charts are kept (no personal data in them).",
    ),
    RETENTION_AUDIT_LOG_DAYS: retentionDays(365).describe(
      'Days the audit log of what members did is kept (0: for ever); who made each API key stays as long as the dashboard (the keys page shows it).',
    ),
  })
  .superRefine(requireSasl);

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;
