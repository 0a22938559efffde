import {
  bool,
  databaseEnv,
  internalGrpcEnv,
  kafkaEnv,
  port,
  requireSasl,
  secret,
  serviceEnv,
  z,
} from '@mds/config';
import { personalDataEnv, retentionDays } from '@mds/personal-data';

const serviceUrl = (fallback: string) => z.url({ protocol: /^https?$/ }).default(fallback);

export const configSchema = z
  .object({
    ...serviceEnv,
    HTTP_PORT: port(8085),
    ...kafkaEnv,
    ...databaseEnv,
    /** client-registry's admin API (keys, webhook, bots, clients), acted on for the member's company only. */
    REGISTRY_URL: serviceUrl('http://127.0.0.1:8081'),
    REGISTRY_ADMIN_TOKEN: secret(z.string().min(16, 'use at least 16 characters')),
    /** webhook-dispatcher's admin API (deliveries, resend, recover, test events). */
    DISPATCHER_URL: serviceUrl('http://127.0.0.1:8084'),
    DISPATCHER_ADMIN_TOKEN: secret(z.string().min(16, 'use at least 16 characters')),
    /** The public API (sends and phone changes go through it, with the member's API key). */
    GATEWAY_URL: serviceUrl('http://127.0.0.1:8080'),
    /** Bearer token of the dashboard's own operator API (/admin/v1: first owner, reset links). */
    DASHBOARD_ADMIN_TOKEN: secret(z.string().min(16, 'use at least 16 characters')),
    /** Where people open the dashboard: one-time links are made with it. */
    PUBLIC_URL: z.url({ protocol: /^https?$/ }).default('http://127.0.0.1:8085'),
    /** Session cookies carry Secure (on for anything served over https). */
    COOKIE_SECURE: bool(false),
    /** A session ends after this long without a request, and after SESSION_MAX_HOURS in any case. */
    SESSION_IDLE_MINUTES: z.coerce.number().int().positive().default(120),
    SESSION_MAX_HOURS: z.coerce
      .number()
      .int()
      .positive()
      .default(24 * 7),
    /** Failed sign-ins in a row that lock a member's account, and for how long. */
    SIGN_IN_LOCKOUT_FAILURES: z.coerce.number().int().positive().default(5),
    SIGN_IN_LOCKOUT_MINUTES: z.coerce.number().int().positive().default(15),
    /** Sign-in attempts per client address per minute, whatever the email. */
    SIGN_IN_PER_ADDRESS_PER_MINUTE: z.coerce.number().int().positive().default(20),
    /** How long an invitation or password reset link works. */
    ONE_TIME_LINK_HOURS: z.coerce.number().int().positive().default(72),
    /** How often pages that show live data ask again (the browser's polling interval). */
    LIVE_REFRESH_MS: z.coerce.number().int().positive().default(2_000),
    /** The built web application (index.html and assets). */
    WEB_ROOT: z.string().optional(),
    /**
     * client-registry's gRPC (person keys: the pages show the numbers and texts sealed in events). Without a
     * token the dashboard shows none of them (its read models keep them empty).
     */
    REGISTRY_GRPC_ADDRESS: z.string().default('127.0.0.1:50051'),
    ...internalGrpcEnv,
    INTERNAL_GRPC_TOKEN: secret(z.string().min(16, 'use at least 16 characters').optional()),
    ...personalDataEnv,
    /** Days a message's or request's row and timeline are kept after it (0: for ever). */
    RETENTION_MESSAGES_DAYS: retentionDays(90),
    /** Days the per-minute counts behind the overview's charts are kept (no personal data in them). */
    RETENTION_MINUTES_DAYS: retentionDays(400),
  })
  .superRefine(requireSasl);

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;
