import { z } from 'zod';

export { z };

const SECRET = 'secret';

/** Marks a config field as secret: `redact` replaces it, so it never reaches a log line. */
export function secret<T extends z.ZodType>(schema: T): T {
  return schema.meta({ [SECRET]: true });
}

function isSecret(schema: z.ZodType): boolean {
  let current: z.ZodType | undefined = schema;
  // Look through wrappers (default, optional) for the marker.
  for (let depth = 0; current && depth < 5; depth++) {
    if (current.meta()?.[SECRET] === true) return true;
    const inner: unknown = (current.def as { innerType?: unknown }).innerType;
    current = inner instanceof z.ZodType ? inner : undefined;
  }
  return false;
}

/** "true"/"false"/"1"/"0"/"yes"/"no" from the environment. */
export function bool(defaultValue: boolean) {
  return z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .default(defaultValue ? 'true' : 'false')
    .transform((v) => v === 'true' || v === '1' || v === 'yes');
}

/** Comma-separated list, trimmed, empty items dropped. */
export function csv() {
  return z
    .string()
    .min(1)
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string()).min(1));
}

export function port(defaultValue: number) {
  return z.coerce.number().int().min(0).max(65535).default(defaultValue);
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n  ${issues.join('\n  ')}`);
  }
}

/** Parses the environment against a service's schema; every problem is reported at once, by variable. */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
  );
}

function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (!url.password) return value;
    url.password = '***';
    return url.toString();
  } catch {
    return '[redacted]';
  }
}

/**
 * A copy of a parsed config safe to log: secret fields become "[redacted]" (URLs keep all but their
 * password), so start-up can print what it runs with.
 */
export function redact<S extends z.ZodObject>(schema: S, config: z.infer<S>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config as Record<string, unknown>)) {
    const field = schema.shape[key] as z.ZodType | undefined;
    if (field && isSecret(field) && value !== undefined) {
      out[key] = typeof value === 'string' && /^[a-z]+:\/\//.test(value) ? redactUrl(value) : '[redacted]';
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** Settings every service has. */
export const serviceEnv = {
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Port of the service's HTTP API (public where it has one), and of /healthz. */
  HTTP_PORT: port(8080),
  /**
   * Port of /healthz, /readyz and /metrics, apart from HTTP_PORT so a service facing the internet does not
   * show them there. Unset: they are served on HTTP_PORT too (local runs, tests); the chart always sets it,
   * and the gateway has it by default.
   */
  OPS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  HTTP_HOST: z.string().default('0.0.0.0'),
  /** How long SIGTERM waits for in-flight work before closing anyway. */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(25_000),
};

/** Kafka connection and topic settings. */
export const kafkaEnv = {
  KAFKA_BROKERS: csv(),
  KAFKA_CLIENT_ID: z.string().optional(),
  KAFKA_SSL: bool(false),
  KAFKA_SASL_MECHANISM: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
  KAFKA_SASL_USERNAME: z.string().optional(),
  KAFKA_SASL_PASSWORD: secret(z.string().optional()),
  /** Replicas of every topic we create: 1 on a single local broker, 3 in production. */
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).default(1),
  /** Prefix of every topic and consumer group name (lets environments share one cluster). */
  KAFKA_TOPIC_PREFIX: z.string().default(''),
  /** Days the per-request topics keep their events for replay (-1: forever). */
  MDS_HISTORY_RETENTION_DAYS: z.coerce.number().int().min(-1).default(365),
};

/** The token every internal gRPC call carries (client-registry checks it; its clients send it). */
export const internalGrpcEnv = {
  INTERNAL_GRPC_TOKEN: secret(z.string().min(16, 'use at least 16 characters')),
};

export const databaseEnv = {
  DATABASE_URL: secret(z.url({ protocol: /^postgres(ql)?$/ })),
  DATABASE_POOL_MAX: z.coerce.number().int().positive().default(10),
};

/** Cross-field check: SASL needs all three settings. */
export function requireSasl(
  config: {
    KAFKA_SASL_MECHANISM?: string | undefined;
    KAFKA_SASL_USERNAME?: string | undefined;
    KAFKA_SASL_PASSWORD?: string | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  if (config.KAFKA_SASL_MECHANISM && (!config.KAFKA_SASL_USERNAME || !config.KAFKA_SASL_PASSWORD)) {
    ctx.addIssue({
      code: 'custom',
      path: ['KAFKA_SASL_USERNAME'],
      message: 'KAFKA_SASL_MECHANISM is set, so KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD are required',
    });
  }
}
