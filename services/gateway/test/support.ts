import { randomBytes } from 'node:crypto';
import { createEventPublisher, createKafkaClient, type EventPublisher } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { createTestDatabase, testInfra, uniqueName } from '@mds/local-infra/testing';
import { Lifecycle, type ServiceContext } from '@mds/service-kit';
import { loadConfig } from '@mds/config';
import { startRegistry } from '@mds/testkit';
import { startGateway } from '../src/app.js';
import { configSchema } from '../src/config.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const INTERNAL_TOKEN = 'test-internal-grpc-token';
/** The test gateways' IDEMPOTENCY_FINGERPRINT_KEYS. */
export const FINGERPRINT_KEY = 'test-idempotency-fingerprint-key-0123456789';
const logger = createLogger({ service: 'gateway-test', level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export function context(): ServiceContext {
  return { logger, lifecycle: new Lifecycle(logger, 15_000) };
}

export interface TestStack {
  gatewayUrl: string;
  /** The gateway's ops listener: /metrics and /readyz. */
  opsUrl: string;
  registryUrl: string;
  registryGrpc: string;
  topicPrefix: string;
  databaseUrl: string;
  stop(): Promise<void>;
}

/** The gateway in this process and client-registry beside it, on the run's broker, in a database of their own. */
export async function startStack(gatewayEnv: Record<string, string> = {}): Promise<TestStack> {
  const infra = testInfra();
  const topicPrefix = `${uniqueName('gw')}.`;
  const databaseUrl = await createTestDatabase('gw');
  const base = {
    KAFKA_BROKERS: infra.kafkaBrokers.join(','),
    DATABASE_URL: databaseUrl,
    KAFKA_TOPIC_PREFIX: topicPrefix,
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    LOG_LEVEL: 'silent',
    INTERNAL_GRPC_TOKEN: INTERNAL_TOKEN,
    IDEMPOTENCY_FINGERPRINT_KEYS: FINGERPRINT_KEY,
  };
  // client-registry as a process of its build (@mds/testkit), on the stack's database and topics.
  const registry = await startRegistry({
    databaseUrl,
    topicPrefix,
    adminToken: ADMIN_TOKEN,
    internalToken: INTERNAL_TOKEN,
    encryptionKeys: `k1:${randomBytes(32).toString('base64')}`,
  });
  const gatewayContext = context();
  const gateway = await startGateway(
    loadConfig(configSchema, {
      ...base,
      REGISTRY_GRPC_ADDRESS: `127.0.0.1:${registry.grpcPort}`,
      API_KEY_CACHE_TTL_MS: '300',
      OPS_PORT: '0',
      ...gatewayEnv,
    }),
    gatewayContext,
  );
  return {
    gatewayUrl: `http://127.0.0.1:${gateway.port}`,
    opsUrl: `http://127.0.0.1:${gateway.opsPort ?? gateway.port}`,
    registryUrl: `http://127.0.0.1:${registry.httpPort}`,
    registryGrpc: `127.0.0.1:${registry.grpcPort}`,
    topicPrefix,
    databaseUrl,
    stop: async () => {
      await gatewayContext.lifecycle.stop();
      await registry.stop();
    },
  };
}

export async function admin<T = Record<string, unknown>>(
  stack: { registryUrl: string },
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const response = await fetch(`${stack.registryUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`admin ${method} ${path}: ${response.status} ${await response.text()}`);
  return (response.status === 204 ? {} : await response.json()) as T;
}

/** A company with one API key, of every scope unless told ('unset': the admin API's default). */
export async function companyWithKey(
  stack: TestStack,
  name = 'Acme',
  scopes: string[] | 'unset' = ['send', 'check', 'change_phone', 'read'],
): Promise<{ companyId: string; apiKey: string; keyId: string }> {
  const company = await admin<{ company_id: string }>(stack, 'POST', '/companies', { name });
  const key = await admin<{ api_key: string; key_id: string }>(
    stack,
    'POST',
    `/companies/${company.company_id}/api-keys`,
    { label: 'test', ...(scopes === 'unset' ? {} : { scopes }) },
  );
  return { companyId: company.company_id, apiKey: key.api_key, keyId: key.key_id };
}

export function post(
  stack: { gatewayUrl: string },
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${stack.gatewayUrl}/api/v1${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

import {
  topics,
  type ClientRequestEvent,
  type MessageEvent,
  type StreamRecord,
  type TopicSpec,
} from '@mds/contracts';
import { collectEvents } from '@mds/kafka/testing';

/** Everything on a topic of the stack, from the beginning, as it arrives. */

export const messageTopic: TopicSpec<MessageEvent> = topics.message;
export const clientRequestTopic: TopicSpec<ClientRequestEvent> = topics.clientRequest;

export { eventually } from '@mds/local-infra/testing';

/** Everything on a topic of the stack, from the beginning, as it arrives. */
export function collect<R extends StreamRecord>(stack: TestStack, topic: TopicSpec<R>) {
  return collectEvents({ brokers: testInfra().kafkaBrokers, topic, topicPrefix: stack.topicPrefix });
}

/** A publisher to the stack's topics, connected: to write what other services would (a sender's outcome). */
export async function stackPublisher(stack: TestStack): Promise<EventPublisher> {
  const silent = createLogger({ service: 'test', level: 'silent' });
  const publisher = createEventPublisher({
    kafka: createKafkaClient({ brokers: testInfra().kafkaBrokers, clientId: 'test' }, silent),
    logger: silent,
    topicPrefix: stack.topicPrefix,
  });
  await publisher.connect();
  return publisher;
}
