import { DEFAULT_WEBHOOK_PORTS, parsePortRanges } from './adapters/ssrf.js';
import {
  dashboardIdentityEnv,
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
import { DEFAULT_DELAYS_SECONDS, parseSchedule } from './domain/schedule.js';

const schedule = z
  .string()
  .default(DEFAULT_DELAYS_SECONDS.join(','))
  .transform((value, ctx) => {
    try {
      return parseSchedule(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  });

const list = z
  .string()
  .default('')
  .transform((v) =>
    v
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );

export const configSchema = z
  .object({
    ...serviceEnv,
    HTTP_PORT: port(8084).describe('Port of the admin API (/admin/v1) and the ops endpoints.'),
    ...kafkaEnv,
    ...databaseEnv,
    ...internalGrpcEnv,
    REGISTRY_GRPC_ADDRESS: z
      .string()
      .default('127.0.0.1:50051')
      .describe("client-registry's gRPC address (host:port): webhook endpoints, and disabling one."),
    DISPATCHER_ADMIN_TOKEN: secret(z.string().min(16, 'use at least 16 characters')).describe(
      'Bearer token of the admin API (/admin/v1).',
    ),
    ...dashboardIdentityEnv,
    WEBHOOK_RETRY_SCHEDULE_SECONDS: schedule.describe(
      'Seconds to wait after attempt 1, 2, ...: the first attempt is immediate, so attempts = entries + 1.',
    ),
    WEBHOOK_RETRY_JITTER: z.coerce
      .number()
      .min(0)
      .max(1)
      .default(0.2)
      .describe('Each wait is multiplied by a random factor in [1 - j, 1 + j].'),
    WEBHOOK_TIMEOUT_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(15_000)
      .describe('A 2xx within this long is a success; anything else (or nothing) a failure.'),
    WEBHOOK_MAX_IN_FLIGHT: z.coerce
      .number()
      .int()
      .positive()
      .default(256)
      .describe('Webhook requests in flight at once per replica.'),
    WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: z.coerce
      .number()
      .int()
      .positive()
      .default(16)
      .describe(
        "Webhook requests in flight at once per endpoint per replica: a slow endpoint holds only its own slots (a company's other endpoints keep theirs).",
      ),
    WEBHOOK_DISABLE_AFTER_HOURS: z.coerce
      .number()
      .positive()
      .default(120)
      .describe(
        'An endpoint whose every attempt failed for this long is disabled (re-enable through the registry); fractions are allowed (0.001 = 3.6 s, for tests).',
      ),
    WEBHOOK_ENDPOINT_CACHE_TTL_MS: z.coerce
      .number()
      .int()
      .min(0)
      .default(5_000)
      .describe(
        'Endpoints are read from the registry once and kept until an account event of their company arrives; a list read while the account follower may miss events (starting up, rebalancing) is trusted this long only.',
      ),
    WEBHOOK_SSRF_ALLOWLIST: list.describe(
      'CIDRs, addresses or host names delivered to even though private or loopback (local development, tests).',
    ),
    WEBHOOK_ALLOWED_PORTS: z
      .string()
      .default(DEFAULT_WEBHOOK_PORTS)
      .transform((spec, ctx) => {
        try {
          return parsePortRanges(spec);
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
          return z.NEVER;
        }
      })
      .describe(
        'Ports webhooks may go to, as ports and ranges: others (SSH, SMTP, ...) are refused as blocked, even on an allowlisted host.',
      ),
    WEBHOOK_RESPONSE_EXCERPT_BYTES: z.coerce
      .number()
      .int()
      .min(0)
      .max(65_536)
      .default(2_048)
      .describe("How much of an endpoint's response body the attempt log keeps."),
    WEBHOOK_LEASE_SECONDS: z.coerce
      .number()
      .int()
      .positive()
      .default(60)
      .describe(
        'How long a replica holds a claimed delivery before another may take it: more than 5 s longer than WEBHOOK_TIMEOUT_MS.',
      ),
    WEBHOOK_POLL_INTERVAL_MS: z.coerce
      .number()
      .int()
      .positive()
      .default(500)
      .describe(
        'Longest sleep of the claim loop with nothing due (a retry falling due, or a delivery another replica stored, waits this long at most).',
      ),
    ...personalDataEnv,
    RETENTION_DELIVERIES_DAYS: retentionDays(30).describe(
      'Days a finished notification (its body, signed as sent, and its attempt log) is kept (0: for ever).',
    ),
  })
  .superRefine(requireSasl)
  .superRefine((c, ctx) => {
    if (c.WEBHOOK_LEASE_SECONDS * 1000 <= c.WEBHOOK_TIMEOUT_MS + 5_000) {
      ctx.addIssue({
        code: 'custom',
        path: ['WEBHOOK_LEASE_SECONDS'],
        message: 'must exceed WEBHOOK_TIMEOUT_MS by more than 5 s, or a slow attempt could be sent twice',
      });
    }
  });

export type Config = z.infer<typeof configSchema>;

/** What the one-shot deploy step (migrations and topics) needs: Kafka and PostgreSQL, nothing else. */
export const deployStepConfigSchema = z
  .object({ LOG_LEVEL: serviceEnv.LOG_LEVEL, ...kafkaEnv, ...databaseEnv })
  .superRefine(requireSasl);

export type DeployStepConfig = z.infer<typeof deployStepConfigSchema>;
