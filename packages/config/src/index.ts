import { readFileSync } from 'node:fs';
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

/**
 * Every setting NAME of the schema may instead be given as NAME_FILE, the path of a file holding the value
 * (how Kubernetes mounts Secrets as files): the file is read, one trailing line break dropped. Setting both
 * is an error, and so is a file that cannot be read; a file that does not exist leaves NAME unset (an optional
 * Secret that was not created), so a required setting is then reported missing.
 */
export function resolveFileSettings(
  names: readonly string[],
  env: NodeJS.ProcessEnv,
): { env: NodeJS.ProcessEnv; issues: string[] } {
  const out: NodeJS.ProcessEnv = { ...env };
  const issues: string[] = [];
  for (const name of names) {
    const file = env[`${name}_FILE`];
    if (file === undefined || file === '') continue;
    if (env[name] !== undefined && env[name] !== '') {
      issues.push(`${name}: set ${name} or ${name}_FILE, not both`);
      continue;
    }
    try {
      out[name] = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      // No such file: an optional Secret that was not created (Kubernetes mounts nothing); NAME stays unset,
      // and the schema says whether it may be.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      issues.push(
        `${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
      );
    }
  }
  return { env: out, issues };
}

/** Puts DATABASE_PASSWORD into DATABASE_URL (which must then carry no password of its own). */
function withDatabasePassword(env: NodeJS.ProcessEnv): string | undefined {
  const password = env.DATABASE_PASSWORD;
  if (!password || !env.DATABASE_URL) return undefined;
  let url: URL;
  try {
    url = new URL(env.DATABASE_URL);
  } catch {
    return undefined; // the schema reports the malformed URL
  }
  if (url.password) return 'DATABASE_PASSWORD: DATABASE_URL has a password already; set only one of them';
  url.password = encodeURIComponent(password);
  env.DATABASE_URL = url.toString();
  return undefined;
}

/**
 * Parses the environment against a service's schema; every problem is reported at once, by variable. Any
 * setting may come from a file instead (NAME_FILE, see resolveFileSettings).
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  const files = resolveFileSettings(Object.keys(schema.shape), env);
  if (files.issues.length > 0) throw new ConfigError(files.issues);
  if ('DATABASE_PASSWORD' in schema.shape) {
    const issue = withDatabasePassword(files.env);
    if (issue) throw new ConfigError([issue]);
  }
  const result = schema.safeParse(files.env);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
  );
}

/** Query parameters that carry a credential: libpq's `password`/`sslpassword`, and the usual token names. */
const SECRET_QUERY_PARAM = /pass|secret|token|key|credential|auth/i;

/** A URL with its password, and any query parameter that looks like a credential, replaced by `***`. */
export function redactUrl(value: string): string {
  try {
    const url = new URL(value);
    if (url.password) url.password = '***';
    for (const name of [...url.searchParams.keys()])
      if (SECRET_QUERY_PARAM.test(name)) url.searchParams.set(name, '***');
    return url.toString();
  } catch {
    return '[redacted]';
  }
}

/**
 * A copy of a parsed config safe to log: secret fields become "[redacted]" (URLs keep all but their
 * password and credential query parameters such as `?password=`), so start-up can print what it runs with.
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
  LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('pino log level.'),
  HTTP_PORT: port(8080).describe(
    "Port of the service's HTTP API (public where it has one), and of /healthz.",
  ),
  OPS_PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .optional()
    .describe(
      'Port of /healthz, /readyz and /metrics, apart from HTTP_PORT so a service facing the internet does not show them there. Unset: they are served on HTTP_PORT too (local runs, tests); the chart always sets it, and the gateway has it by default.',
    ),
  HTTP_HOST: z.string().default('0.0.0.0').describe('Address HTTP_PORT (and OPS_PORT) listen on.'),
  SHUTDOWN_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(25_000)
    .describe('How long SIGTERM waits for in-flight work before closing anyway.'),
};

/** Kafka connection and topic settings. */
export const kafkaEnv = {
  // Every service of the event log reads events naming messengers, so a plugin's messenger is known to each.
  MESSENGER_PLUGINS: csv()
    .optional()
    .describe(
      'Modules adding messengers to the catalogue (package names or absolute paths, comma-separated), loaded before the rest of the configuration is read; the same list on every service. See docs/adding-a-messenger.md.',
    ),
  KAFKA_BROKERS: csv().describe('Kafka bootstrap servers, comma-separated host:port.'),
  KAFKA_CLIENT_ID: z.string().optional().describe("Kafka client id (unset: the service's name)."),
  KAFKA_SSL: bool(false).describe('TLS to the brokers.'),
  KAFKA_SASL_MECHANISM: z
    .enum(['plain', 'scram-sha-256', 'scram-sha-512'])
    .optional()
    .describe('SASL mechanism; set it with KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD.'),
  KAFKA_SASL_USERNAME: z.string().optional().describe('SASL user name.'),
  KAFKA_SASL_PASSWORD: secret(z.string().optional()).describe('SASL password.'),
  KAFKA_REPLICATION_FACTOR: z.coerce
    .number()
    .int()
    .min(1)
    .default(1)
    .describe(
      'Replicas of every topic we create: 1 on a single local broker, 3 in production (min ISR becomes 2).',
    ),
  KAFKA_TOPIC_PREFIX: z
    .string()
    .default('')
    .describe('Prefix of every topic and consumer group name (lets environments share one cluster).'),
  MDS_HISTORY_RETENTION_DAYS: z.coerce
    .number()
    .int()
    .min(-1)
    .default(365)
    .describe('Days the per-request topics keep their events for replay (-1: forever).'),
};

/**
 * How a caller reaches client-registry's gRPC: its own service token (client-registry knows it by its
 * SHA-256 in REGISTRY_CALLERS and lets it call only its RPCs), and TLS.
 */
export const internalGrpcEnv = {
  INTERNAL_GRPC_TOKEN: secret(z.string().min(16, 'use at least 16 characters')).describe(
    "This service's own token for client-registry's gRPC (REGISTRY_CALLERS there holds its SHA-256).",
  ),
  REGISTRY_GRPC_TLS: bool(false).describe(
    'TLS to client-registry (with the system CAs unless REGISTRY_GRPC_TLS_CA_FILE names one).',
  ),
  REGISTRY_GRPC_TLS_CA_FILE: z
    .string()
    .min(1)
    .optional()
    .describe("CA that signed client-registry's certificate (unset: the system CAs); set, TLS is on."),
  REGISTRY_GRPC_TLS_CERT_FILE: z
    .string()
    .min(1)
    .optional()
    .describe("This service's client certificate and key, for mutual TLS."),
  REGISTRY_GRPC_TLS_KEY_FILE: z
    .string()
    .min(1)
    .optional()
    .describe("This service's client key, for mutual TLS (with REGISTRY_GRPC_TLS_CERT_FILE)."),
  REGISTRY_GRPC_TLS_SERVER_NAME: z
    .string()
    .min(1)
    .optional()
    .describe(
      "The name client-registry's certificate carries, when it is not the host of REGISTRY_GRPC_ADDRESS.",
    ),
};

/** The TLS files of internalGrpcEnv, or undefined for plaintext (any file set implies TLS). */
export function registryGrpcTls(config: {
  REGISTRY_GRPC_TLS: boolean;
  REGISTRY_GRPC_TLS_CA_FILE?: string | undefined;
  REGISTRY_GRPC_TLS_CERT_FILE?: string | undefined;
  REGISTRY_GRPC_TLS_KEY_FILE?: string | undefined;
  REGISTRY_GRPC_TLS_SERVER_NAME?: string | undefined;
}): { caFile?: string; certFile?: string; keyFile?: string; serverName?: string } | undefined {
  const tls =
    config.REGISTRY_GRPC_TLS ||
    Boolean(
      config.REGISTRY_GRPC_TLS_CA_FILE ||
      config.REGISTRY_GRPC_TLS_CERT_FILE ||
      config.REGISTRY_GRPC_TLS_KEY_FILE,
    );
  if (!tls) return undefined;
  return {
    ...(config.REGISTRY_GRPC_TLS_CA_FILE ? { caFile: config.REGISTRY_GRPC_TLS_CA_FILE } : {}),
    ...(config.REGISTRY_GRPC_TLS_CERT_FILE ? { certFile: config.REGISTRY_GRPC_TLS_CERT_FILE } : {}),
    ...(config.REGISTRY_GRPC_TLS_KEY_FILE ? { keyFile: config.REGISTRY_GRPC_TLS_KEY_FILE } : {}),
    ...(config.REGISTRY_GRPC_TLS_SERVER_NAME ? { serverName: config.REGISTRY_GRPC_TLS_SERVER_NAME } : {}),
  };
}

/**
 * Express's `trust proxy` for a service behind proxies (TRUST_PROXY): unset or empty, the client address is the
 * socket's; a hop count, or proxies' addresses/CIDRs/`loopback`, comma separated. `true` (trust any proxy) is
 * refused: it lets every client pick its own address. Describe it where it is used.
 */
export const trustProxy = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === '' ? undefined : /^\d+$/.test(v) ? Number(v) : v))
  .refine((v) => v !== 'true', 'trusting every proxy lets any client pick its address: name the proxies');

/**
 * The dashboard's identity, on the services whose admin API it calls (client-registry, webhook-dispatcher): the
 * public keys its company assertions are verified with (docs/security.md).
 */
export const dashboardIdentityEnv = {
  DASHBOARD_PUBLIC_KEYS: z
    .string()
    .regex(
      /^\s*[A-Za-z0-9_-]{43}(?:[\s,]+[A-Za-z0-9_-]{43})*\s*$/,
      'Ed25519 public keys, 43 base64url characters each (a JWK "x"), comma separated',
    )
    .optional()
    .describe(
      "The dashboard's Ed25519 public key (a JWK \"x\"; two, comma separated, during a rotation): the admin API then admits the dashboard's short-lived assertions, each for one company's routine operations. Unset: the admin token only.",
    ),
};

export const databaseEnv = {
  DATABASE_URL: secret(z.url({ protocol: /^postgres(ql)?$/ })).describe(
    'PostgreSQL connection URL; the service works in a schema of its own.',
  ),
  DATABASE_PASSWORD: secret(z.string().min(1).optional()).describe(
    'The password, when DATABASE_URL carries none (e.g. DATABASE_PASSWORD_FILE, a mounted Secret): loadConfig puts it into DATABASE_URL, escaped.',
  ),
  DATABASE_POOL_MAX: z.coerce
    .number()
    .int()
    .positive()
    .default(10)
    .describe('PostgreSQL connections per replica.'),
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
