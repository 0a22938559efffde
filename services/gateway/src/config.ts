import { databaseEnv, internalGrpcEnv, kafkaEnv, port, requireSasl, serviceEnv, z } from '@mds/config';
import { personalDataEnv, retentionDays } from '@mds/personal-data';

export const configSchema = z
  .object({
    ...serviceEnv,
    HTTP_PORT: port(8080),
    ...kafkaEnv,
    ...databaseEnv,
    ...internalGrpcEnv,
    /** client-registry's gRPC address (host:port): API key -> company. */
    REGISTRY_GRPC_ADDRESS: z.string().default('127.0.0.1:50051'),
    /** How long a resolved API key is trusted without asking again: a revoked key stops working within this. */
    API_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).default(30_000),
    /** How long an unknown key is remembered as unknown. */
    API_KEY_NEGATIVE_CACHE_TTL_MS: z.coerce.number().int().min(0).default(5_000),
    /** Bound on waiting for Kafka's acknowledgement before answering 503. */
    PUBLISH_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
    /** Largest request body accepted. */
    MAX_BODY_BYTES: z.coerce.number().int().positive().default(65_536),
    /** Sustained requests per second, per API key and per company, for sends and for the other calls. */
    RATE_LIMIT_SEND_PER_KEY: z.coerce.number().positive().default(100),
    RATE_LIMIT_SEND_PER_COMPANY: z.coerce.number().positive().default(200),
    RATE_LIMIT_OTHER_PER_KEY: z.coerce.number().positive().default(20),
    RATE_LIMIT_OTHER_PER_COMPANY: z.coerce.number().positive().default(40),
    /** Reads of GET /api/v1/events/{event_id} per second, per API key and per company. */
    RATE_LIMIT_READ_PER_KEY: z.coerce.number().positive().default(50),
    RATE_LIMIT_READ_PER_COMPANY: z.coerce.number().positive().default(100),
    /** How long the read model lets new events gather before it applies them (how stale it may be). */
    PROJECTION_MAX_WAIT_MS: z.coerce.number().int().positive().default(200),
    /** A bucket holds this many seconds of its rate (short bursts above the sustained rate). */
    RATE_LIMIT_BURST_SECONDS: z.coerce.number().positive().default(2),
    /** How long an Idempotency-Key is remembered. */
    IDEMPOTENCY_TTL_HOURS: z.coerce.number().positive().default(24),
    ...personalDataEnv,
    /** Days GET /api/v1/events/{event_id} answers for a message or request after its last change (0: for ever). */
    RETENTION_EVENT_STATES_DAYS: retentionDays(90),
  })
  .superRefine(requireSasl);

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;
