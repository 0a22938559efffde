import {
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

export const configSchema = z
  .object({
    ...serviceEnv,
    HTTP_PORT: port(8081),
    ...kafkaEnv,
    ...databaseEnv,
    ...internalGrpcEnv,
    /** gRPC for the other services: API key -> company, bot credentials, webhook endpoints. */
    GRPC_PORT: port(50051),
    GRPC_HOST: z.string().default('0.0.0.0'),
    /** Bearer token of the admin API (/admin/v1). */
    REGISTRY_ADMIN_TOKEN: secret(z.string().min(16, 'use at least 16 characters')),
    /** AES-256-GCM keys sealing bot tokens and webhook secrets: "id:base64(32 bytes)[,older...]"; the first seals. */
    REGISTRY_ENCRYPTION_KEYS: secret(z.string().min(1)),
    TELEGRAM_API_ROOT: z.url().default('https://api.telegram.org'),
    MAX_API_BASE: z.url().default('https://platform-api2.max.ru'),
    /** How long a bot token check (getMe, GET /me) may take. */
    TOKEN_CHECK_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
    /** How long a rotated-out webhook secret keeps signing beside the new one. */
    WEBHOOK_SECRET_OVERLAP_HOURS: z.coerce.number().positive().default(24),
    /** How long the senders keep trying a message before failing it (DeliveryRequested.deliver_before). */
    MESSAGE_DELIVERY_DEADLINE_SECONDS: z.coerce.number().int().positive().default(3_600),
    ...personalDataEnv,
    /**
     * Days the links consumer remembers which events it applied (a record redelivered later than this would
     * be applied again; Kafka redelivers within minutes of a crash). 0: for ever.
     */
    RETENTION_PROCESSED_EVENTS_DAYS: retentionDays(30),
  })
  .superRefine(requireSasl);

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;
