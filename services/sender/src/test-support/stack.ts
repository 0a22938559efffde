// Test helpers for the senders: a messenger simulator and client-registry as processes of their builds
// (@mds/testkit: a package never imports a service), against the run's real Kafka and PostgreSQL, each
// test file with its own topics and databases.
import { randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import {
  messengerCode,
  newEvent,
  type Messenger,
  topics,
  type BotChat,
  type Complete,
  type DeliveryEvent,
  type FallbackRoute,
  type MessageEvent,
  type StreamRecord,
  type TopicSpec,
} from '@mds/contracts';
import { createEventPublisher, createKafkaClient, type EventPublisher } from '@mds/kafka';
import { collectEvents } from '@mds/kafka/testing';
import { createLogger, type Logger } from '@mds/logging';
import { createTestDatabase, testInfra, uniqueName } from '@mds/local-infra/testing';
import { Lifecycle, type ServiceContext } from '@mds/service-kit';
import { startRegistry, startSimulator, type SimulatorProcess } from '@mds/testkit';
import type { BuiltInMessengerName } from '@mds/contracts';
import { loadConfig } from '@mds/config';
import type { PersonKeyPort } from '@mds/personal-data';
import { startMessengerSender } from '../app.js';
import type { BotDirectory } from '../application/ports.js';
import { configSchema, type Settings } from '../config.js';

export const INTERNAL_TOKEN = 'sender-test-internal-token';
const ADMIN_TOKEN = 'sender-test-admin-token-000';

export type { BuiltInMessengerName };

export interface Person {
  id: number;
  phone: string;
  telegramUserId: number;
  maxUserId: number;
}

export interface SimBot {
  simId: number;
  botId: string;
  token: string;
}

/** What the simulator answers a person's action with: the updates it produced. */
export interface ActionAnswer {
  updates: { chat_id?: number }[];
}

/**
 * The chat a person opened with a bot by `start`: in Telegram the person's own id, in MAX a chat of its own
 * (the id the start's update carries).
 */
export function chatOfStart(
  messenger: BuiltInMessengerName,
  bot: SimBot,
  person: Person,
  started: ActionAnswer,
): BotChat {
  const userId = String(messenger === 'telegram' ? person.telegramUserId : person.maxUserId);
  const chatId = messenger === 'telegram' ? userId : String(started.updates[0]?.chat_id ?? userId);
  return { messenger: messengerCode(messenger), botId: bot.botId, chatId, userId };
}

export interface SenderStack {
  topicPrefix: string;
  simulator: SimulatorProcess;
  registryGrpc: string;
  publisher: EventPublisher;
  /** The environment a sender under test needs (Kafka, database, registry, the simulator). */
  senderEnv: Record<string, string>;
  logger: Logger;
  companyId: string;
  control<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  admin<T = unknown>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }>;
  createBot(messenger: BuiltInMessengerName, name: string): Promise<SimBot>;
  /** A simulated person with a new phone number (named Test unless said otherwise). */
  createPerson(name?: { firstName?: string; lastName?: string }): Promise<Person>;
  collect<R extends StreamRecord>(
    topic: TopicSpec<R>,
  ): Promise<{ events: Complete<R>[]; stop: () => Promise<void> }>;
  /** Stops client-registry and starts it again on the same ports, database and topics with these keys. */
  restartRegistry(encryptionKeys: string): Promise<void>;
  /** The registry's database (to read what it stores). */
  registryDatabaseUrl: string;
  stop(): Promise<void>;
}

let phoneCounter = Math.floor(Math.random() * 1_000_000);

/** A Russian mobile number no other test in this run uses. */
export function uniquePhone(): string {
  phoneCounter = (phoneCounter + 1) % 10_000_000;
  return `7916${String(phoneCounter).padStart(7, '0')}`;
}

export async function startSenderStack(
  o: { simulatorEnv?: Record<string, string>; encryptionKeys?: string } = {},
): Promise<SenderStack> {
  const infra = testInfra();
  const logger = createLogger({ service: 'sender-test', level: 'silent' });
  const simulator = await startSimulator(o.simulatorEnv);
  const topicPrefix = `${uniqueName('snd')}.`;
  const registryDb = await createTestDatabase('sndreg');
  const senderDb = await createTestDatabase('snd');
  const registry = await startRegistry({
    databaseUrl: registryDb,
    topicPrefix,
    adminToken: ADMIN_TOKEN,
    internalToken: INTERNAL_TOKEN,
    encryptionKeys: o.encryptionKeys ?? `k1:${randomBytes(32).toString('base64')}`,
    simulatorUrl: simulator.url,
  });
  const registryUrl = `http://127.0.0.1:${registry.httpPort}`;
  const publisher = createEventPublisher({
    kafka: createKafkaClient({ brokers: infra.kafkaBrokers, clientId: 'sender-test' }, logger),
    logger,
    topicPrefix,
  });
  await publisher.connect();

  async function control<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${simulator.url}/control${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`simulator ${method} ${path}: ${res.status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  async function admin<T>(method: string, path: string, body?: unknown) {
    const res = await fetch(`${registryUrl}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as T };
  }

  const companyId = (await admin<{ company_id: string }>('POST', '/companies', { name: 'Sender test' })).body
    .company_id;

  return {
    topicPrefix,
    simulator,
    registryGrpc: `127.0.0.1:${registry.grpcPort}`,
    publisher,
    logger,
    companyId,
    senderEnv: {
      KAFKA_BROKERS: infra.kafkaBrokers.join(','),
      KAFKA_TOPIC_PREFIX: topicPrefix,
      DATABASE_URL: senderDb,
      REGISTRY_GRPC_ADDRESS: `127.0.0.1:${registry.grpcPort}`,
      INTERNAL_GRPC_TOKEN: INTERNAL_TOKEN,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      LOG_LEVEL: 'silent',
      MESSENGER_API_BASE: simulator.url,
      UPDATES_POLL_TIMEOUT_S: '1',
      BOTS_REFRESH_MS: '500',
    },
    control,
    admin,
    async createBot(messenger, name) {
      const username =
        messenger === 'telegram'
          ? `${name}_${randomBytes(3).toString('hex')}_bot`
          : `${name}_${randomBytes(3).toString('hex')}`;
      const created = await control<{ id: number; token: string }>('POST', '/bots', { messenger, username });
      const registered = await admin<{ bot_id: string }>('POST', `/companies/${companyId}/bots`, {
        messenger,
        name,
        token: created.token,
      });
      if (registered.status !== 201) throw new Error(`bot registration: ${JSON.stringify(registered.body)}`);
      return { simId: created.id, botId: registered.body.bot_id, token: created.token };
    },
    async createPerson(name = {}) {
      const phone = uniquePhone();
      const p = await control<{ id: number; telegram_user_id: number; max_user_id: number }>(
        'POST',
        '/people',
        {
          phone_number: phone,
          first_name: name.firstName ?? 'Test',
          ...(name.lastName === undefined ? {} : { last_name: name.lastName }),
        },
      );
      return { id: p.id, phone, telegramUserId: p.telegram_user_id, maxUserId: p.max_user_id };
    },
    collect: (topic) => collectEvents({ brokers: infra.kafkaBrokers, topic, topicPrefix }),
    registryDatabaseUrl: registryDb,
    async restartRegistry(encryptionKeys) {
      await registry.restart({ REGISTRY_ENCRYPTION_KEYS: encryptionKeys });
    },
    async stop() {
      await publisher.disconnect();
      await registry.stop();
      await simulator.close();
    },
  };
}

/** Runs a service's start function with its own lifecycle; `stop()` is its SIGTERM. */
export async function runInProcess(
  start: (context: ServiceContext) => Promise<{ httpPort: number }>,
  o: { logger?: Logger } = {},
): Promise<{ url: string; stop: () => Promise<void> }> {
  const logger =
    o.logger ??
    createLogger({
      service: 'sender',
      level: process.env.SENDER_TEST_LOG_LEVEL ?? 'silent',
    });
  const lifecycle = new Lifecycle(logger, 20_000);
  const { httpPort } = await start({ logger, lifecycle });
  return { url: `http://127.0.0.1:${httpPort}`, stop: () => lifecycle.stop() };
}

/** A routed delivery, as client-registry publishes it: for tests that skip routing. */
export function deliveryRequest(
  companyId: string,
  chat: BotChat,
  o: {
    text?: string;
    buttons?: { text: string; url: string }[];
    deadlineMs?: number;
    /** The message's expiry (ttl_seconds), from now. */
    expiresInMs?: number;
    /** Its time (send_at), from now. */
    sendInMs?: number;
    messageId?: string;
    /** A message with a fallback: the channel this order is for. */
    fallback?: FallbackRoute;
  } = {},
): Complete<DeliveryEvent> {
  const messageId = o.messageId ?? randomUUID();
  return newEvent<DeliveryEvent>({
    eventId: randomUUID(),
    occurredAt: new Date(),
    companyId,
    streamId: messageId,
    correlationId: messageId,
    producer: 'sender-test',
    event: {
      $case: 'deliveryRequested',
      value: {
        messageId,
        chat,
        botName: 'test',
        text: o.text ?? `hello ${messageId}`,
        buttons: o.buttons ?? [],
        acceptedAt: new Date(),
        deliverBefore: new Date(Date.now() + (o.deadlineMs ?? 60_000)),
        ...(o.expiresInMs === undefined ? {} : { expiresAt: new Date(Date.now() + o.expiresInMs) }),
        ...(o.sendInMs === undefined ? {} : { sendAt: new Date(Date.now() + o.sendInMs) }),
        ...(o.fallback ? { fallback: o.fallback } : {}),
      },
    },
  });
}

export async function publishDeliveries(
  stack: SenderStack,
  topic: TopicSpec<DeliveryEvent>,
  records: Complete<DeliveryEvent>[],
): Promise<string[]> {
  await stack.publisher.publish(
    records.map((record) => {
      const chat = record.event?.$case === 'deliveryRequested' ? record.event.value.chat : undefined;
      return { topic, key: chat?.botId ?? '', record };
    }),
  );
  return records.map((r) => r.metadata.streamId);
}

/** The accepted message the gateway would publish, for tests going through the registry's routing. */
export function messageAccepted(
  companyId: string,
  phone: string,
  messenger: Messenger,
  o: { text?: string; buttons?: { text: string; url: string }[] } = {},
): Complete<MessageEvent> {
  const messageId = randomUUID();
  return newEvent<MessageEvent>({
    eventId: messageId,
    occurredAt: new Date(),
    companyId,
    streamId: messageId,
    correlationId: messageId,
    producer: 'sender-test',
    event: {
      $case: 'messageAccepted',
      value: {
        phoneNumber: phone,
        text: o.text ?? 'hi',
        messenger,
        botName: '',
        buttons: o.buttons ?? [],
        apiKeyId: 'k',
        idempotencyKey: '',
      },
    },
  });
}

export async function publishAccepted(stack: SenderStack, record: Complete<MessageEvent>): Promise<string> {
  await stack.publisher.publish([{ topic: topics.message, key: record.metadata.streamId, record }]);
  return record.metadata.streamId;
}

/** The outcome event of each message id seen so far (a message with two outcomes would be a bug). */
export function outcomesOf(events: Complete<MessageEvent>[], messageIds: readonly string[]) {
  const wanted = new Set(messageIds);
  return events.filter((e) => wanted.has(e.metadata.streamId) && e.event.$case !== 'messageAccepted');
}

/**
 * POSTs `bytes` of JSON-looking body in chunks and resolves with the status of the first response, which may
 * come before the body is sent (a server refusing early): errors writing the rest after that are ignored.
 */
export function postLargeBody(url: string, headers: Record<string, string>, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } });
    req.on('response', (res) => {
      answered = true;
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    const chunk = Buffer.alloc(64 * 1024, ' ');
    let sent = 0;
    const pump = () => {
      while (!answered && sent < bytes) {
        sent += chunk.length;
        if (!req.write(sent === chunk.length ? Buffer.concat([Buffer.from('{"x":"'), chunk]) : chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}

/** The settings of `messenger`'s sender from `env` (MESSENGER set to it). */
export function senderConfig(messenger: string, env: Record<string, string>): Settings {
  return loadConfig(configSchema, { ...env, MESSENGER: messenger });
}

/** The sender of `messenger` in this process, as its deployment runs it (MESSENGER=<messenger>). */
export function runSender(
  messenger: string,
  env: Record<string, string>,
  o: { logger?: Logger; directory?: BotDirectory; personKeys?: PersonKeyPort; schema?: string } = {},
): Promise<{ url: string; stop: () => Promise<void> }> {
  const { logger, ...options } = o;
  const config = senderConfig(messenger, env);
  return runInProcess((context) => startMessengerSender(config, context, options), logger ? { logger } : {});
}
