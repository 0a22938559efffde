// One service as a process of its build (services/<name>/dist/main.js), for a package's or another
// service's tests: the messenger simulator and client-registry, on the run's broker and database.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@mds/local-infra';
import { createTestDatabase, testInfra, uniqueName } from '@mds/local-infra/testing';
import { RunningService } from './running-service.js';

/** Where the processes' logs go: the test-artifacts of the package whose tests run. */
function artifacts(): string {
  const dir = join(process.cwd(), 'test-artifacts', 'testkit');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/**
 * Starts service `name` from its build, listening on `ports` (by variable: HTTP_PORT, GRPC_PORT), with `env`
 * (and an ops port of its own); resolves once its /readyz says 200.
 */
export async function startService(
  name: string,
  ports: Record<string, number>,
  env: Record<string, string>,
): Promise<RunningService> {
  const all = { ...ports, OPS_PORT: await freePort() };
  const service = new RunningService(
    { name },
    uniqueName(name),
    all,
    {
      ...process.env,
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: process.env.TESTKIT_LOG_LEVEL ?? 'info',
      ...env,
      ...Object.fromEntries(Object.entries(all).map(([k, v]) => [k, String(v)])),
    },
    artifacts(),
  );
  await service.start();
  return service;
}

export interface SimulatorProcess {
  url: string;
  close(): Promise<void>;
}

/** The messenger simulator (Telegram and MAX Bot APIs and its /control API), as a process. */
export async function startSimulator(env: Record<string, string> = {}): Promise<SimulatorProcess> {
  const service = await startService('messenger-simulator', { HTTP_PORT: await freePort() }, env);
  return {
    url: service.url,
    close: async () => void (await service.stop()),
  };
}

export interface RegistryOptions {
  adminToken: string;
  internalToken: string;
  /** REGISTRY_ENCRYPTION_KEYS; a fresh key by default. */
  encryptionKeys?: string;
  /** A database of its own by default. */
  databaseUrl?: string;
  /** Its own topics by default. */
  topicPrefix?: string;
  /** Its gRPC port; a free one by default (to start it again where a client already points). */
  grpcPort?: number;
  /** The messenger simulator's URL, for both messengers' APIs. */
  simulatorUrl?: string;
  /** Further settings. */
  env?: Record<string, string>;
}

export interface RegistryProcess {
  url: string;
  /** host:port of its gRPC API. */
  grpc: string;
  httpPort: number;
  grpcPort: number;
  databaseUrl: string;
  topicPrefix: string;
  encryptionKeys: string;
  /** Stops it (SIGTERM) and starts it again on the same ports, database and topics; `env` changes settings. */
  restart(env?: Record<string, string>): Promise<void>;
  stop(): Promise<void>;
}

/** client-registry as a process of its build, on the run's broker. */
export async function startRegistry(o: RegistryOptions): Promise<RegistryProcess> {
  const infra = testInfra();
  const databaseUrl = o.databaseUrl ?? (await createTestDatabase('tkreg'));
  const topicPrefix = o.topicPrefix ?? `${uniqueName('tkreg')}.`;
  const encryptionKeys = o.encryptionKeys ?? `k1:${randomBytes(32).toString('base64')}`;
  const ports = { HTTP_PORT: await freePort(), GRPC_PORT: o.grpcPort || (await freePort()) };
  const service = await startService('client-registry', ports, {
    KAFKA_BROKERS: infra.kafkaBrokers.join(','),
    DATABASE_URL: databaseUrl,
    KAFKA_TOPIC_PREFIX: topicPrefix,
    GRPC_HOST: '127.0.0.1',
    REGISTRY_ADMIN_TOKEN: o.adminToken,
    INTERNAL_GRPC_TOKEN: o.internalToken,
    REGISTRY_ENCRYPTION_KEYS: encryptionKeys,
    ...(o.simulatorUrl ? { TELEGRAM_API_ROOT: o.simulatorUrl, MAX_API_BASE: o.simulatorUrl } : {}),
    ...o.env,
  });
  return {
    url: service.url,
    grpc: `127.0.0.1:${ports.GRPC_PORT}`,
    httpPort: ports.HTTP_PORT,
    grpcPort: ports.GRPC_PORT,
    databaseUrl,
    topicPrefix,
    encryptionKeys,
    restart: (env = {}) => service.restart('SIGTERM', env),
    stop: async () => void (await service.stop()),
  };
}
