import {
  dashboardIdentityEnv,
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

export const configSchema = z
  .object({
    ...serviceEnv,
    HTTP_PORT: port(8080).describe('Port of the public API (/api/v1).'),
    OPS_PORT: port(9090).describe('/readyz and /metrics: never on the public port.'),
    ...kafkaEnv,
    ...databaseEnv,
    ...internalGrpcEnv,
    DASHBOARD_PUBLIC_KEYS: dashboardIdentityEnv.DASHBOARD_PUBLIC_KEYS.describe(
      "The dashboard's Ed25519 public key (a JWK \"x\"; two, comma separated, during a rotation): a request without X-API-Key may then carry the dashboard's short-lived assertion for a signed-in member (Authorization: Bearer), and is taken as a request of that member's company, recorded under the key id `dashboard:<member_id>`. Unset: API keys only.",
    ),
    REGISTRY_GRPC_ADDRESS: z
      .string()
      .default('127.0.0.1:50051')
      .describe("client-registry's gRPC address (host:port): API key -> company."),
    API_KEY_CACHE_TTL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(30_000)
      .describe(
        'How long a resolved API key is trusted without asking again. A revocation does not wait for it: every replica follows the account log and refuses a revoked key at once (within a second); this bounds only a revocation the follower missed. A key in use is asked about again in the background after 50-80 % of it, so it never lapses.',
      ),
    API_KEY_DIRECTORY_REFRESH_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(60_000)
      .describe(
        "How often the ids of every company's API keys are loaded from client-registry: a key with a known id is never charged to its address's AUTH_FAILURES_PER_ADDRESS_PER_SECOND.",
      ),
    API_KEY_NEGATIVE_CACHE_TTL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(5_000)
      .describe('How long a refused key is remembered as refused (by key id, apart from the good keys).'),
    API_KEY_MAX_CONCURRENT_LOOKUPS: z.coerce
      .number()
      .int()
      .positive()
      .default(32)
      .describe(
        'Registry lookups of API keys in flight at once; one more is answered 503 `auth_busy` (Retry-After: 1).',
      ),
    AUTH_FAILURES_PER_ADDRESS_PER_SECOND: z.coerce
      .number()
      .positive()
      .default(2)
      .describe(
        "Requests without a good API key (missing, malformed, unknown, revoked) allowed per client address (an IPv6 /64) per second, with bursts of AUTH_FAILURE_BURST; beyond them 429 `auth_rate_limited`, before any lookup. A key whose id is a company's is never charged.",
      ),
    AUTH_FAILURE_BURST: z.coerce
      .number()
      .int()
      .positive()
      .default(20)
      .describe('Burst of requests without a good API key one client address may make at once.'),
    AUTH_FAILURE_MAX_ADDRESSES: z.coerce
      .number()
      .int()
      .positive()
      .default(100_000)
      .describe(
        'Client addresses remembered by that limit (about 100 bytes each); the least recently seen go first.',
      ),
    TRUST_PROXY: trustProxy.describe(
      "Express's `trust proxy`: unset, the client address is the socket's and X-Forwarded-For is ignored; set it to the proxies in front of the gateway (a hop count such as `1`, or addresses/CIDRs/`loopback`, comma separated) to take the address X-Forwarded-For gives as far as those proxies vouch for it.",
    ),
    PUBLISH_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(5_000)
      .describe("Bound on waiting for Kafka's acknowledgement before answering 503."),
    MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(65_536)
      .describe('Largest request body accepted.'),
    MAX_BATCH_BODY_BYTES: z.coerce
      .number()
      .int()
      .positive()
      .default(16_777_216)
      .describe(
        'Largest body of POST /api/v1/send/batch: 16 MiB holds 500 messages of the longest text even written as \\u escapes (about 25 KB each), with some buttons; 413 `body_too_large` beyond.',
      ),
    RATE_LIMIT_SEND_PER_KEY: z.coerce
      .number()
      .positive()
      .default(100)
      .describe('Sends per second per API key (sustained).'),
    RATE_LIMIT_SEND_PER_COMPANY: z.coerce
      .number()
      .positive()
      .default(200)
      .describe('Sends per second per company (sustained).'),
    RATE_LIMIT_OTHER_PER_KEY: z.coerce
      .number()
      .positive()
      .default(20)
      .describe('change_phone and client/check requests per second per API key (sustained).'),
    RATE_LIMIT_OTHER_PER_COMPANY: z.coerce
      .number()
      .positive()
      .default(40)
      .describe('change_phone and client/check requests per second per company (sustained).'),
    RATE_LIMIT_READ_PER_KEY: z.coerce
      .number()
      .positive()
      .default(50)
      .describe('Reads of GET /api/v1/events/{event_id} per second per API key.'),
    RATE_LIMIT_READ_PER_COMPANY: z.coerce
      .number()
      .positive()
      .default(100)
      .describe('Reads of GET /api/v1/events/{event_id} per second per company.'),
    REQUEST_LOG_FLUSH_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(1_000)
      .describe(
        'How often the per-key API request log (topic mds.api-requests.v1) is published: records wait at most this long, never on the request path. One produce request per period however many requests it served (a second: about 0.1 produce requests per message at 10 sends/s, less above).',
      ),
    REQUEST_LOG_MAX_BUFFERED: z.coerce
      .number()
      .int()
      .positive()
      .default(10_000)
      .describe(
        'Request log records kept waiting for Kafka at most (about 300 bytes each); beyond them records are dropped and counted in mds_gateway_request_log_dropped_total, never delaying a request.',
      ),
    PROJECTION_MAX_WAIT_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(200)
      .describe(
        'How long the read model lets new events gather before it applies them (how stale it may be).',
      ),
    RATE_LIMIT_BURST_SECONDS: z.coerce
      .number()
      .positive()
      .default(2)
      .describe('A bucket holds this many seconds of its rate (short bursts above the sustained rate).'),
    IDEMPOTENCY_TTL_HOURS: z.coerce
      .number()
      .positive()
      .default(24)
      .describe('How long an Idempotency-Key is remembered.'),
    IDEMPOTENCY_FINGERPRINT_KEYS: secret(
      z
        .string()
        .refine(
          (v) => v.split(',').every((k) => k.trim().length >= 32),
          'comma-separated keys of at least 32 characters each',
        ),
    ).describe(
      'Keys of the Idempotency-Key fingerprints (HMAC-SHA-256 of the request), comma-separated, 32+ characters each: the first makes new fingerprints, every one matches (to rotate, put a new key first and drop the old one after IDEMPOTENCY_TTL_HOURS). Kept outside the database, so a copy of it cannot test guesses of a number and a text against the fingerprints.',
    ),
    ...personalDataEnv,
    RETENTION_EVENT_STATES_DAYS: retentionDays(90).describe(
      'Days GET /api/v1/events/{event_id} answers for a message or request after its last change (0: for ever).',
    ),
  })
  .superRefine(requireSasl);

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;
