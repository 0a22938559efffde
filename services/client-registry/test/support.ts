import { randomBytes, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { loadConfig } from '@mds/config';
import {
  newEvent,
  topics,
  type BotChat,
  type BotUpdateEvent,
  type ClientRequestEvent,
  type Complete,
  type MessageEvent,
  type StreamRecord,
  type TopicSpec,
} from '@mds/contracts';
import { createEventPublisher, createKafkaClient, type EventPublisher } from '@mds/kafka';
import { collectEvents } from '@mds/kafka/testing';
import { createLogger } from '@mds/logging';
import { createTestDatabase, eventually, testInfra, uniqueName } from '@mds/local-infra/testing';
import type { Knex } from '@mds/db';
import { Lifecycle } from '@mds/service-kit';
import { startSimulator, type SimulatorProcess } from '@mds/testkit';
import { startRegistry } from '../src/app.js';
import { SCHEMA } from '../src/adapters/db/migrations.js';
import { rebuildRegistry } from '../src/rebuild.js';
import { configSchema } from '../src/config.js';

export const ADMIN_TOKEN = 'registry-test-admin-token';
export const INTERNAL_TOKEN = 'registry-test-internal-token';

export interface RegistryStack {
  url: string;
  grpc: string;
  topicPrefix: string;
  databaseUrl: string;
  /** REGISTRY_ENCRYPTION_KEYS of the running registry. */
  encryptionKeys: string;
  simulator: SimulatorProcess;
  publisher: EventPublisher;
  /** Everything the registry logged, to check that no secret reaches a log line. */
  logs: string[];
  stop(): Promise<void>;
}

/** `env` adds or overrides settings (undefined removes one). */
export async function startRegistryStack(
  env: Record<string, string | undefined> = {},
): Promise<RegistryStack> {
  const infra = testInfra();
  const quiet = createLogger({ service: 'registry-test', level: 'silent' });
  const logs: string[] = [];
  const logger = createLogger({
    service: 'client-registry',
    level: 'debug',
    destination: new Writable({
      write(chunk: Buffer, _e, done) {
        logs.push(chunk.toString());
        done();
      },
    }),
  });
  const simulator = await startSimulator();
  // A test may bring its own log, database and keys (an upgrade test: what a previous release left there).
  const topicPrefix = env.KAFKA_TOPIC_PREFIX ?? `${uniqueName('reg')}.`;
  const databaseUrl = env.DATABASE_URL ?? (await createTestDatabase('reg'));
  const lifecycle = new Lifecycle(logger, 15_000);
  const encryptionKeys = env.REGISTRY_ENCRYPTION_KEYS ?? `k1:${randomBytes(32).toString('base64')}`;
  const started = await startRegistry(
    loadConfig(configSchema, {
      KAFKA_BROKERS: infra.kafkaBrokers.join(','),
      DATABASE_URL: databaseUrl,
      KAFKA_TOPIC_PREFIX: topicPrefix,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: '0',
      REGISTRY_ADMIN_TOKEN: ADMIN_TOKEN,
      INTERNAL_GRPC_TOKEN: INTERNAL_TOKEN,
      REGISTRY_ENCRYPTION_KEYS: encryptionKeys,
      TELEGRAM_API_ROOT: simulator.url,
      MAX_API_BASE: simulator.url,
      ...env,
    }),
    { logger, lifecycle },
  );
  const publisher = createEventPublisher({
    kafka: createKafkaClient({ brokers: infra.kafkaBrokers, clientId: 'registry-test' }, quiet),
    logger: quiet,
    topicPrefix,
  });
  await publisher.connect();
  return {
    url: `http://127.0.0.1:${started.httpPort}`,
    grpc: `127.0.0.1:${started.grpcPort}`,
    topicPrefix,
    databaseUrl,
    encryptionKeys,
    simulator,
    publisher,
    logs,
    stop: async () => {
      await publisher.disconnect();
      await lifecycle.stop();
      await simulator.close();
    },
  };
}

export async function admin<T = Record<string, unknown>>(
  stack: RegistryStack,
  method: string,
  path: string,
  body?: unknown,
  token = ADMIN_TOKEN,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${stack.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as T };
}

/** A bot in the simulator (so its token checks out), registered with a company. */
export async function registerBot(
  stack: RegistryStack,
  companyId: string,
  messenger: 'telegram' | 'max',
  name: string,
): Promise<{ botId: string; token: string }> {
  const created = (await (
    await fetch(`${stack.simulator.url}/control/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messenger, username: `${name}_${randomBytes(3).toString('hex')}_bot` }),
    })
  ).json()) as { token: string };
  const registered = await admin<{ bot_id: string }>(stack, 'POST', `/companies/${companyId}/bots`, {
    messenger,
    name,
    token: created.token,
  });
  if (registered.status !== 201)
    throw new Error(`bot registration: ${registered.status} ${JSON.stringify(registered.body)}`);
  return { botId: registered.body.bot_id, token: created.token };
}

export async function createCompany(stack: RegistryStack, name = 'Acme'): Promise<string> {
  return (await admin<{ company_id: string }>(stack, 'POST', '/companies', { name })).body.company_id;
}

const envelope = (companyId: string, streamId: string) => ({
  eventId: randomUUID(),
  occurredAt: new Date(),
  companyId,
  streamId,
  producer: 'registry-test',
});

/** What a sender publishes when a person acts on a bot. */
export function botUpdate(
  companyId: string,
  event: NonNullable<BotUpdateEvent['event']>,
  eventId?: string,
): Complete<BotUpdateEvent> {
  const chat = (event.value as { chat?: BotChat }).chat!;
  return newEvent<BotUpdateEvent>({
    ...envelope(companyId, chat.botId),
    ...(eventId ? { eventId } : {}),
    event,
  });
}

export function publishBotUpdates(stack: RegistryStack, records: Complete<BotUpdateEvent>[]): Promise<void> {
  return stack.publisher.publish(
    records.map((record) => ({ topic: topics.botUpdate, key: record.metadata.streamId, record })),
  );
}

export async function request(
  stack: RegistryStack,
  companyId: string,
  event: NonNullable<ClientRequestEvent['event']>,
  times = 1,
): Promise<string> {
  const requestId = randomUUID();
  const record = newEvent<ClientRequestEvent>({
    ...envelope(companyId, requestId),
    correlationId: requestId,
    event,
  });
  for (let i = 0; i < times; i++)
    await stack.publisher.publish([{ topic: topics.clientRequest, key: requestId, record }]);
  return requestId;
}

export function messageAccepted(
  companyId: string,
  phone: string,
  messenger: 1 | 2,
  botName = '',
): Complete<MessageEvent> {
  return newEvent<MessageEvent>({
    ...envelope(companyId, randomUUID()),
    event: {
      $case: 'messageAccepted',
      value: {
        phoneNumber: phone,
        text: 'hi',
        messenger,
        botName,
        buttons: [{ text: 'Open', url: 'https://example.com' }],
        apiKeyId: 'k',
        idempotencyKey: '',
      },
    },
  });
}

export async function publishMessage(stack: RegistryStack, record: Complete<MessageEvent>): Promise<string> {
  await stack.publisher.publish([{ topic: topics.message, key: record.metadata.streamId, record }]);
  return record.metadata.streamId;
}

export function sendMessage(
  stack: RegistryStack,
  companyId: string,
  phone: string,
  messenger: 1 | 2,
  botName = '',
): Promise<string> {
  return publishMessage(stack, messageAccepted(companyId, phone, messenger, botName));
}

export const chatOf = (botId: string, chatId: string, messenger: 1 | 2 = 1): BotChat => ({
  messenger,
  botId,
  chatId,
  userId: chatId,
});

export { eventually } from '@mds/local-infra/testing';

/** Waits until the outbox is empty: the log then holds every decision made so far (before a rebuild from it). */
export function outboxDrained(db: Knex): Promise<true> {
  return eventually(
    'an empty outbox',
    async () =>
      Number((await db('outbox').count<{ count: string }[]>('* as count'))[0]!.count) === 0 || undefined,
  );
}

export function collect<R extends StreamRecord>(stack: RegistryStack, topic: TopicSpec<R>) {
  return collectEvents({ brokers: testInfra().kafkaBrokers, topic, topicPrefix: stack.topicPrefix });
}

/** Rebuilds the registry from the stack's log into `schema`, beside the live one (under `encryptionKeys`). */
export function rebuildFromLog(stack: RegistryStack, schema: string, encryptionKeys = stack.encryptionKeys) {
  const logger = createLogger({ service: 'rebuild', level: 'silent' });
  return rebuildRegistry({
    kafka: createKafkaClient({ brokers: testInfra().kafkaBrokers, clientId: 'rebuild' }, logger),
    logger,
    topicPrefix: stack.topicPrefix,
    databaseUrl: stack.databaseUrl,
    schema,
    encryptionKeys,
    personKeysSchema: SCHEMA,
  });
}
