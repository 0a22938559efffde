import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '@mds/config';
import {
  newEvent,
  registryV1,
  topics,
  type ClientRequestEvent,
  type Complete,
  type MessageEvent,
  type WebhookEvent,
} from '@mds/contracts';
import { clientChannelOptions, grpc } from '@mds/grpc';
import { createEventPublisher, createKafkaClient, type EventPublisher } from '@mds/kafka';
import { collectEvents } from '@mds/kafka/testing';
import { createLogger } from '@mds/logging';
import { createTestDatabase, testInfra, uniqueName } from '@mds/local-infra/testing';
import { Lifecycle } from '@mds/service-kit';
import { startRegistry } from '@mds/testkit';
import { configSchema, startDispatcher } from '../src/app.js';

export { eventually } from '@mds/local-infra/testing';

export const ADMIN_TOKEN = 'dispatcher-test-admin-token';
export const REGISTRY_ADMIN_TOKEN = 'registry-test-admin-token';
export const INTERNAL_TOKEN = 'dispatcher-test-internal-token';

/** The schedule's clock, moved by the test. */
export class ManualClock {
  constructor(public at = new Date('2026-11-21T10:00:00.000Z')) {}
  now = () => this.at;
  advance(ms: number): void {
    this.at = new Date(this.at.getTime() + ms);
  }
}

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
  /** What the standardwebhooks library made of it with the secrets the test registered for the path. */
  verified: boolean;
}

export type Behaviour = (req: IncomingMessage, res: ServerResponse, nth: number) => void | Promise<void>;

/**
 * A real HTTP receiver on 127.0.0.1: each path answers as its behaviour says (200 by default) and every
 * request is verified on arrival with the `standardwebhooks` library against the path's secrets.
 */
export class Receiver {
  readonly received: ReceivedWebhook[] = [];
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly secrets = new Map<string, string[]>();
  private readonly counts = new Map<string, number>();
  private server!: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const path = req.url ?? '/';
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]),
        );
        const secrets = this.secrets.get(path) ?? [];
        const verified =
          secrets.length > 0 &&
          secrets.every((secret) => {
            try {
              new Webhook(secret).verify(body, headers);
              return true;
            } catch {
              return false;
            }
          });
        this.received.push({ path, headers, body, verified });
        const nth = (this.counts.get(path) ?? 0) + 1;
        this.counts.set(path, nth);
        const behaviour = this.behaviours.get(path) ?? ((_q, s) => void s.writeHead(200).end('ok'));
        void Promise.resolve(behaviour(req, res, nth)).catch(() => res.destroy());
      });
    });
    this.server.keepAliveTimeout = 1_000;
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** A fresh path with its behaviour; requests to it are verified against `secrets` (all must verify). */
  endpoint(behaviour?: Behaviour): string {
    const path = `/hooks/${randomUUID()}`;
    if (behaviour) this.behaviours.set(path, behaviour);
    return path;
  }

  on(path: string, behaviour: Behaviour): void {
    this.behaviours.set(path, behaviour);
  }

  verifyWith(path: string, secrets: string[]): void {
    this.secrets.set(path, secrets);
  }

  at(path: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.path === path);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const quiet = createLogger({ service: 'dispatcher-test', level: 'silent' });

export interface RegistryHandle {
  url: string;
  grpc: string;
  client: registryV1.RegistryServiceClient;
  admin<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
  /**
   * A company whose webhook is `url`; returns its id and signing secret. With the receiver the URL points
   * into, every request to it is verified with the secret on arrival.
   */
  company(url: string, receiver?: Receiver): Promise<{ companyId: string; secret: string }>;
  /**
   * A new endpoint of the company (the registry's admin API), with its own secret; with the receiver its URL
   * points into, every request to it is verified with that secret on arrival.
   */
  endpoint(
    companyId: string,
    settings: { url: string; event_types?: string[]; rate_limit_per_second?: number },
    receiver?: Receiver,
  ): Promise<{ endpointId: string; secret: string }>;
  stop(): Promise<void>;
}

/** Has the receiver verify what arrives at `url` (if it points into it) with these secrets. */
function verifyAt(receiver: Receiver | undefined, url: string, secrets: string[]): void {
  if (receiver && url.startsWith(receiver.url)) receiver.verifyWith(url.slice(receiver.url.length), secrets);
}

export interface RegistrySetup {
  databaseUrl: string;
  topicPrefix: string;
  grpcPort: number;
  encryptionKeys: string;
}

/**
 * What a registry needs to be started again with the same state on the same port. Give it the dispatcher's
 * topic prefix for the dispatcher to follow its account events (endpoint changes).
 */
export async function registrySetup(grpcPort = 0, topicPrefix?: string): Promise<RegistrySetup> {
  return {
    databaseUrl: await createTestDatabase('whreg'),
    topicPrefix: topicPrefix ?? `${uniqueName('whreg')}.`,
    grpcPort,
    encryptionKeys: `k1:${randomBytes(32).toString('base64')}`,
  };
}

export async function startTestRegistry(setup?: RegistrySetup): Promise<RegistryHandle> {
  const s = setup ?? (await registrySetup());
  // client-registry as a process of its build (@mds/testkit); the same setup starts it again as it was.
  const started = await startRegistry({
    databaseUrl: s.databaseUrl,
    topicPrefix: s.topicPrefix,
    grpcPort: s.grpcPort,
    adminToken: REGISTRY_ADMIN_TOKEN,
    internalToken: INTERNAL_TOKEN,
    encryptionKeys: s.encryptionKeys,
  });
  const url = `http://127.0.0.1:${started.httpPort}`;
  const grpcAddress = `127.0.0.1:${started.grpcPort}`;
  const client = new registryV1.RegistryServiceClient(
    grpcAddress,
    grpc.credentials.createInsecure(),
    clientChannelOptions('mds.registry.v1.RegistryService', { token: INTERNAL_TOKEN }),
  );
  const admin = async <T>(method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${REGISTRY_ADMIN_TOKEN}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : {}) as T };
  };
  return {
    url,
    grpc: grpcAddress,
    client,
    admin,
    async company(webhookUrl, receiver) {
      const created = await admin<{ company_id: string }>('POST', '/companies', { name: 'Hooked' });
      const companyId = created.body.company_id;
      await admin('PUT', `/companies/${companyId}/webhook`, { url: webhookUrl });
      const secrets = await admin<{ secrets: { secret: string }[] }>(
        'GET',
        `/companies/${companyId}/webhook/secrets`,
      );
      const secret = secrets.body.secrets[0]!.secret;
      verifyAt(receiver, webhookUrl, [secret]);
      return { companyId, secret };
    },
    async endpoint(companyId, settings, receiver) {
      const created = await admin<{ endpoint: { id: string }; secret: string }>(
        'POST',
        `/companies/${companyId}/webhook/endpoints`,
        settings,
      );
      if (created.status !== 201)
        throw new Error(`no endpoint: ${created.status} ${JSON.stringify(created.body)}`);
      verifyAt(receiver, settings.url, [created.body.secret]);
      return { endpointId: created.body.endpoint.id, secret: created.body.secret };
    },
    stop: async () => {
      client.close();
      await started.stop();
    },
  };
}

export interface DispatcherHandle {
  url: string;
  stop(): Promise<void>;
  admin<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
  ): Promise<{ status: number; body: T }>;
}

export interface DispatcherSetup {
  registry: RegistryHandle;
  databaseUrl: string;
  topicPrefix: string;
  clock: ManualClock;
  env?: Record<string, string>;
}

export async function startTestDispatcher(s: DispatcherSetup): Promise<DispatcherHandle> {
  const lifecycle = new Lifecycle(quiet, 20_000);
  const started = await startDispatcher(
    loadConfig(configSchema, {
      KAFKA_BROKERS: testInfra().kafkaBrokers.join(','),
      DATABASE_URL: s.databaseUrl,
      KAFKA_TOPIC_PREFIX: s.topicPrefix,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      LOG_LEVEL: 'silent',
      REGISTRY_GRPC_ADDRESS: s.registry.grpc,
      INTERNAL_GRPC_TOKEN: INTERNAL_TOKEN,
      DISPATCHER_ADMIN_TOKEN: ADMIN_TOKEN,
      WEBHOOK_SSRF_ALLOWLIST: '127.0.0.1/32',
      WEBHOOK_ENDPOINT_CACHE_TTL_MS: '100',
      WEBHOOK_POLL_INTERVAL_MS: '50',
      WEBHOOK_TIMEOUT_MS: '8000',
      WEBHOOK_LEASE_SECONDS: '20',
      ...s.env,
    }),
    { logger: quiet, lifecycle },
    { now: s.clock.now, random: () => 0.5 },
  );
  const url = `http://127.0.0.1:${started.httpPort}`;
  return {
    url,
    stop: () => lifecycle.stop(),
    async admin<T>(method: string, path: string, body?: unknown, token = ADMIN_TOKEN) {
      const response = await fetch(`${url}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: (text ? JSON.parse(text) : {}) as T };
    },
  };
}

export function outcomePublisher(topicPrefix: string): EventPublisher {
  return createEventPublisher({
    kafka: createKafkaClient({ brokers: testInfra().kafkaBrokers, clientId: 'dispatcher-test' }, quiet),
    logger: quiet,
    topicPrefix,
  });
}

export function messageSent(companyId: string, messageId = randomUUID()): Complete<MessageEvent> {
  return newEvent<MessageEvent>({
    eventId: randomUUID(),
    occurredAt: new Date(),
    companyId,
    streamId: messageId,
    correlationId: messageId,
    producer: 'telegram-sender',
    event: {
      $case: 'messageSent',
      value: {
        botId: randomUUID(),
        providerMessageId: '42',
        sentAt: new Date('2026-11-21T09:59:58.250Z'),
        attempts: 1,
      },
    },
  });
}

export function messageEvent(
  companyId: string,
  event: NonNullable<MessageEvent['event']>,
  messageId = randomUUID(),
): Complete<MessageEvent> {
  return newEvent<MessageEvent>({
    eventId: randomUUID(),
    occurredAt: new Date('2026-11-21T09:59:59.000Z'),
    companyId,
    streamId: messageId,
    producer: 'test',
    event,
  });
}

export function requestEvent(
  companyId: string,
  event: NonNullable<ClientRequestEvent['event']>,
): Complete<ClientRequestEvent> {
  const requestId = randomUUID();
  return newEvent<ClientRequestEvent>({
    eventId: randomUUID(),
    occurredAt: new Date('2026-11-21T09:59:59.500Z'),
    companyId,
    streamId: requestId,
    producer: 'client-registry',
    event,
  });
}

export async function publishMessages(
  publisher: EventPublisher,
  records: Complete<MessageEvent>[],
): Promise<void> {
  await publisher.publish(
    records.map((record) => ({ topic: topics.message, key: record.metadata.streamId, record })),
  );
}

export async function publishRequests(
  publisher: EventPublisher,
  records: Complete<ClientRequestEvent>[],
): Promise<void> {
  await publisher.publish(
    records.map((record) => ({ topic: topics.clientRequest, key: record.metadata.streamId, record })),
  );
}

export function collectWebhookEvents(topicPrefix: string) {
  return collectEvents<WebhookEvent>({
    brokers: testInfra().kafkaBrokers,
    topic: topics.webhook,
    topicPrefix,
  });
}
