import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { loadConfig } from '@mds/config';
import {
  Messenger,
  newEvent,
  topics,
  type Complete,
  type DeliveryEvent,
  type MessageEvent,
  type WebhookEvent,
  deliveryTopic,
} from '@mds/contracts';
import { createEventPublisher, createKafkaClient, type EventPublisher } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { freePort } from '@mds/local-infra';
import { createTestDatabase, testInfra, uniqueName } from '@mds/local-infra/testing';
import { Lifecycle } from '@mds/service-kit';
import { startRegistry, startService, startSimulator, type SimulatorProcess } from '@mds/testkit';
import { configSchema, startDashboard } from '../src/app.js';
import { createRegistryClient } from '@mds/registry-client';

export { eventually } from '@mds/local-infra/testing';

export const REGISTRY_TOKEN = 'dashboard-test-registry-token';
export const DISPATCHER_TOKEN = 'dashboard-test-dispatcher-token';
export const OPERATOR_TOKEN = 'dashboard-test-operator-token';
const INTERNAL_TOKEN = 'dashboard-test-internal-token';

/** The dashboard's identity for a test stack: an Ed25519 key pair as JWK "d" (its setting) and "x" (the services'). */
export function dashboardIdentity(): { signingKey: string; publicKey: string } {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  return { signingKey: jwk.d!, publicKey: jwk.x! };
}
const quiet = createLogger({ service: 'dashboard-test', level: 'silent' });

/** The dashboard in this process, client-registry and webhook-dispatcher beside it, on their own topics and database. */
export interface DashboardStack {
  url: string;
  /** The operator's listener (/admin/v1), apart from the public one (the first replica's). */
  operatorUrl: string;
  /** Every replica's address (the first is `url`), with `replicas`. */
  urls: string[];
  databaseUrl: string;
  registryUrl: string;
  /** webhook-dispatcher's admin API, when the stack has one. */
  dispatcherUrl?: string;
  /** Turns an endpoint off as the dispatcher does when it keeps failing (the registry's gRPC, `automatic`). */
  disableAutomatically(companyId: string, endpointId: string, reason: string): Promise<void>;
  /** The dashboard's signing key (JWK "d"), to call the services as the dashboard does. */
  signingKey: string;
  simulator: SimulatorProcess;
  publisher: EventPublisher;
  topicPrefix: string;
  admin<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: T }>;
  operator<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
  ): Promise<{ status: number; body: T }>;
  stop(): Promise<void>;
}

async function json<T>(url: string, method: string, token: string, body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as T };
}

export async function startDashboardStack(
  o: {
    env?: Record<string, string>;
    /**
     * A webhook-dispatcher (default), or none; `'registry-topics'`: one on the registry's topics, which answers
     * test events from the registry's endpoints but never delivers (and so never logs) the messages a test
     * writes into the dashboard's log.
     */
    dispatcher?: boolean | 'registry-topics';
    replicas?: number;
    now?: () => Date;
    /**
     * A gateway on the dashboard's topics (its events reach the read models), trusting the dashboard's key: the
     * dashboard's sends and phone changes go through it as the member. Without one, they fail (502).
     */
    gateway?: boolean;
    /** The dashboard opens the personal data sealed in events (the registry's person keys), as in production. */
    personKeys?: boolean;
  } = {},
): Promise<DashboardStack> {
  const infra = testInfra();
  const topicPrefix = `${uniqueName('dash')}.`;
  const databaseUrl = await createTestDatabase('dash');
  const kafka = {
    KAFKA_BROKERS: infra.kafkaBrokers.join(','),
    KAFKA_TOPIC_PREFIX: topicPrefix,
    DATABASE_URL: databaseUrl,
  };
  const local = { HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LOG_LEVEL: 'silent' };
  // The simulator, the registry and the dispatcher as processes of their builds (@mds/testkit).
  const simulator = await startSimulator();
  const lifecycle = new Lifecycle(quiet, 20_000);
  // The registry on topics of its own: it answers the admin API and gRPC, and never routes (and so never
  // fails) the messages a test writes into the dashboard's log.
  const identity = dashboardIdentity();
  const registryTopicPrefix = `${uniqueName('dashreg')}.`;
  const registry = await startRegistry({
    env: { DASHBOARD_PUBLIC_KEYS: identity.publicKey },
    databaseUrl,
    topicPrefix: registryTopicPrefix,
    adminToken: REGISTRY_TOKEN,
    internalToken: INTERNAL_TOKEN,
    simulatorUrl: simulator.url,
  });
  const registryUrl = registry.url;
  // Without a dispatcher, no webhook event but a test's own reaches the log.
  const dispatcher =
    o.dispatcher === false
      ? undefined
      : await startService(
          'webhook-dispatcher',
          { HTTP_PORT: await freePort() },
          {
            ...kafka,
            ...(o.dispatcher === 'registry-topics' ? { KAFKA_TOPIC_PREFIX: registryTopicPrefix } : {}),
            LOG_LEVEL: local.LOG_LEVEL,
            REGISTRY_GRPC_ADDRESS: registry.grpc,
            INTERNAL_GRPC_TOKEN: INTERNAL_TOKEN,
            DISPATCHER_ADMIN_TOKEN: DISPATCHER_TOKEN,
            DASHBOARD_PUBLIC_KEYS: identity.publicKey,
            WEBHOOK_SSRF_ALLOWLIST: '127.0.0.1/32',
          },
        );
  const dispatcherUrl = dispatcher ? dispatcher.url : 'http://127.0.0.1:9';
  const gateway = o.gateway
    ? await startService(
        'gateway',
        { HTTP_PORT: await freePort() },
        {
          ...kafka,
          LOG_LEVEL: local.LOG_LEVEL,
          REGISTRY_GRPC_ADDRESS: registry.grpc,
          INTERNAL_GRPC_TOKEN: INTERNAL_TOKEN,
          IDEMPOTENCY_FINGERPRINT_KEYS: randomBytes(32).toString('base64url'),
          DASHBOARD_PUBLIC_KEYS: identity.publicKey,
        },
      )
    : undefined;
  const config = loadConfig(configSchema, {
    ...kafka,
    ...local,
    OPERATOR_PORT: '0',
    REGISTRY_URL: registryUrl,
    DISPATCHER_URL: dispatcherUrl,
    DASHBOARD_SIGNING_KEY: identity.signingKey,
    GATEWAY_URL: gateway?.url ?? 'http://127.0.0.1:9',
    DASHBOARD_ADMIN_TOKEN: OPERATOR_TOKEN,
    PUBLIC_URL: 'http://dashboard.test',
    SIGN_IN_FREE_FAILURES: '3',
    // Browsers of the tests come from their own addresses through a proxy on loopback.
    TRUST_PROXY: 'loopback',
    SIGN_IN_PER_ADDRESS_PER_MINUTE: '1000',
    ...(o.personKeys ? { REGISTRY_GRPC_ADDRESS: registry.grpc, INTERNAL_GRPC_TOKEN: INTERNAL_TOKEN } : {}),
    ...o.env,
  });
  // Replicas share the database and the consumer group: each owns some of the read models' partitions.
  const urls: string[] = [];
  const operatorUrls: string[] = [];
  for (let i = 0; i < (o.replicas ?? 1); i++) {
    const dashboard = await startDashboard(config, { logger: quiet, lifecycle }, o.now ? { now: o.now } : {});
    urls.push(`http://127.0.0.1:${dashboard.httpPort}`);
    operatorUrls.push(`http://127.0.0.1:${dashboard.operatorPort}`);
  }
  const url = urls[0]!;
  const operatorUrl = operatorUrls[0]!;
  const publisher = createEventPublisher({
    kafka: createKafkaClient({ brokers: infra.kafkaBrokers, clientId: 'dashboard-test' }, quiet),
    logger: quiet,
    topicPrefix,
  });
  await publisher.connect();
  return {
    url,
    operatorUrl,
    urls,
    databaseUrl,
    registryUrl,
    ...(dispatcher ? { dispatcherUrl: dispatcher.url } : {}),
    disableAutomatically: async (companyId, endpointId, reason) => {
      const client = createRegistryClient({
        address: registry.grpc,
        token: INTERNAL_TOKEN,
        deadlineMs: 5_000,
      });
      try {
        if (!(await client.disableWebhookEndpoint(companyId, reason, endpointId)))
          throw new Error(`endpoint ${endpointId} was not there, or off already`);
      } finally {
        client.close();
      }
    },
    signingKey: identity.signingKey,
    simulator,
    publisher,
    topicPrefix,
    admin: (method, path, body) => json(`${registryUrl}/admin/v1${path}`, method, REGISTRY_TOKEN, body),
    operator: (method, path, body, token = OPERATOR_TOKEN) =>
      json(`${operatorUrl}/admin/v1${path}`, method, token, body),
    stop: async () => {
      await publisher.disconnect();
      await lifecycle.stop();
      await dispatcher?.stop();
      await gateway?.stop();
      await registry.stop();
      await simulator.close();
    },
  };
}

/** A browser's view of the dashboard's API: a cookie jar of one, and the CSRF token of its session. */
export class Browser {
  cookie = '';
  csrf = '';
  constructor(readonly base: string) {}

  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: T; headers: Headers }> {
    const response = await fetch(`${this.base}/api${path}`, {
      method,
      headers: {
        ...(this.cookie ? { cookie: this.cookie } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(method === 'GET' || !this.csrf ? {} : { 'x-csrf-token': this.csrf }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const set = response.headers.getSetCookie();
    for (const c of set) this.cookie = c.split(';')[0]!.endsWith('=') ? '' : c.split(';')[0]!;
    const text = await response.text();
    const parsed = (text ? JSON.parse(text) : {}) as T;
    const csrf = (parsed as { csrf_token?: string }).csrf_token;
    if (csrf) this.csrf = csrf;
    return { status: response.status, body: parsed, headers: response.headers };
  }
}

/** The token of a one-time link (what follows # in it). */
export const tokenOf = (link: string) => link.split('#')[1]!;

/** A company in the registry and its first owner, signed in; answers both and the owner's browser. */
export async function companyWithOwner(stack: DashboardStack, name = 'Acme') {
  const { body: company } = await stack.admin<{ company_id: string }>('POST', '/companies', { name });
  const email = `owner-${randomUUID().slice(0, 8)}@${name.toLowerCase().replace(/\W/g, '')}.test`;
  const invited = await stack.operator<{ link: string }>('POST', `/companies/${company.company_id}/members`, {
    email,
  });
  const owner = new Browser(stack.url);
  const redeemed = await owner.call('POST', '/links/redeem', {
    token: tokenOf(invited.body.link),
    password: PASSWORD,
  });
  if (redeemed.status !== 200) throw new Error(`redeem: ${redeemed.status} ${JSON.stringify(redeemed.body)}`);
  return { companyId: company.company_id, email, owner };
}

export const PASSWORD = 'correct horse battery staple';

/** A member of the owner's company with this role, signed in. */
export async function member(stack: DashboardStack, owner: Browser, role: 'owner' | 'developer' | 'viewer') {
  const email = `${role}-${randomUUID().slice(0, 8)}@example.test`;
  const invited = await owner.call<{ link: string }>('POST', '/members', { email, role });
  if (invited.status !== 201) throw new Error(`invite: ${invited.status} ${JSON.stringify(invited.body)}`);
  const browser = new Browser(stack.url);
  await browser.call('POST', '/links/redeem', { token: tokenOf(invited.body.link), password: PASSWORD });
  return { email, browser };
}

/** A bot in the simulator, registered to the company through the registry. */
export async function bot(
  stack: DashboardStack,
  companyId: string,
  messenger: 'telegram' | 'max' = 'telegram',
) {
  const created = (await (
    await fetch(`${stack.simulator.url}/control/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messenger, username: `b${randomBytes(3).toString('hex')}_bot` }),
    })
  ).json()) as { id: number; token: string };
  const name = `bot_${randomBytes(3).toString('hex')}`;
  const registered = await stack.admin<{ bot_id: string }>('POST', `/companies/${companyId}/bots`, {
    messenger,
    name,
    token: created.token,
  });
  return { botId: registered.body.bot_id, name, token: created.token, simulatorId: created.id };
}

const meta = (companyId: string, streamId: string, producer: string, at: Date) => ({
  eventId: randomUUID(),
  occurredAt: at,
  companyId,
  streamId,
  correlationId: streamId,
  producer,
});

/**
 * The events of one message's whole story, as the services write them: accepted, routed, sent or failed,
 * then its webhook attempts. `at` is the acceptance time; each step follows a few milliseconds later.
 */
export function messageStory(o: {
  companyId: string;
  messageId?: string;
  botId: string;
  phone?: string;
  text?: string;
  apiKeyId?: string;
  at?: Date;
  outcome?: { sent: true } | { sent: false; errorCode: string };
  /** Its expiry (ttl_seconds), from `at`. */
  expiresInMs?: number;
  /** Its time (send_at), from `at`. */
  sendInMs?: number;
  /** A cancel (POST /api/v1/cancel) before its outcome. */
  canceled?: boolean;
  /**
   * A fallback to MAX: Telegram (the message's own channel, its default bot `shop_bot`) could not reach the
   * person (`errorCode`, before any routing there), so it was routed to `botId`, MAX's `botName`, which decided.
   */
  fallback?: { botName: string; errorCode: string };
  webhook?: ('succeeded' | 'retryable')[];
  /** The endpoint the webhook attempts went to; unset: none named (events of older versions, ep_default). */
  endpointId?: string;
}) {
  const id = o.messageId ?? randomUUID();
  const at = o.at ?? new Date();
  const t = (ms: number) => new Date(at.getTime() + ms);
  const expiry = {
    ...(o.expiresInMs === undefined ? {} : { expiresAt: t(o.expiresInMs) }),
    ...(o.sendInMs === undefined ? {} : { sendAt: t(o.sendInMs) }),
  };
  const maxChannel = o.fallback && { messenger: Messenger.MESSENGER_MAX, botName: o.fallback.botName };
  const tried = o.fallback && {
    messenger: Messenger.MESSENGER_TELEGRAM,
    botName: 'shop_bot',
    botId: '',
    errorCode: o.fallback.errorCode,
    errorDescription: 'no link to the person',
    failedAt: t(10),
  };
  const message: Complete<MessageEvent>[] = [
    newEvent<MessageEvent>({
      ...meta(o.companyId, id, 'gateway', at),
      event: {
        $case: 'messageAccepted',
        value: {
          phoneNumber: o.phone ?? '79123456789',
          text: o.text ?? 'Your order has shipped',
          messenger: 1,
          botName: '',
          buttons: [{ text: 'Track', url: 'https://example.com/track' }],
          apiKeyId: o.apiKeyId ?? 'k',
          idempotencyKey: '',
          ...expiry,
          ...(maxChannel
            ? {
                fallback: {
                  channel: 0,
                  current: { messenger: Messenger.MESSENGER_TELEGRAM, botName: '' },
                  next: [maxChannel],
                  tried: [],
                },
              }
            : {}),
        },
      },
    }),
  ];
  if (maxChannel && tried)
    message.push(
      newEvent<MessageEvent>({
        ...meta(o.companyId, id, 'telegram-sender', t(10)),
        event: {
          $case: 'messageAttemptFailed',
          value: {
            route: {
              channel: 0,
              current: { messenger: tried.messenger, botName: 'shop_bot' },
              next: [maxChannel],
              tried: [],
            },
            attempt: tried,
            acceptedAt: at,
          },
        },
      }),
    );
  // The channel that decided the message (a fallback's: channel 1, after Telegram's attempt).
  const decided = maxChannel && tried && { channel: 1, current: maxChannel, next: [], tried: [tried] };
  const delivery = newEvent<DeliveryEvent>({
    ...meta(o.companyId, o.botId, 'client-registry', t(maxChannel ? 15 : 5)),
    event: {
      $case: 'deliveryRequested',
      value: {
        messageId: id,
        chat: {
          messenger: maxChannel?.messenger ?? Messenger.MESSENGER_TELEGRAM,
          botId: o.botId,
          chatId: '5001',
          userId: '5001',
        },
        botName: maxChannel?.botName ?? 'shop',
        text: o.text ?? 'Your order has shipped',
        buttons: [],
        acceptedAt: at,
        deliverBefore: t(3_600_000),
        ...expiry,
        ...(decided ? { fallback: { ...decided, tried: [] } } : {}),
      },
    },
  });
  const outcome = o.outcome ?? { sent: true };
  if (o.canceled)
    message.push(
      newEvent<MessageEvent>({
        ...meta(o.companyId, id, 'gateway', t(20)),
        event: { $case: 'messageCancelRequested', value: { messenger: 1, apiKeyId: o.apiKeyId ?? 'k' } },
      }),
    );
  message.push(
    newEvent<MessageEvent>({
      ...meta(o.companyId, id, maxChannel ? 'max-sender' : 'telegram-sender', t(40)),
      event: outcome.sent
        ? {
            $case: 'messageSent',
            value: {
              botId: o.botId,
              providerMessageId: '77',
              sentAt: t(40),
              attempts: 1,
              ...(decided ? { fallback: decided } : {}),
            },
          }
        : {
            $case: 'messageDeliveryFailed',
            value: {
              errorCode: outcome.errorCode,
              errorDescription: o.canceled ? 'canceled' : 'the messenger said no',
              failedAt: t(40),
              attempts: o.canceled ? 0 : 2,
              botId: o.botId,
              ...(decided ? { fallback: decided } : {}),
            },
          },
    }),
  );
  const webhookId = `msg_${randomBytes(16).toString('hex')}`;
  const webhook: Complete<WebhookEvent>[] = (o.webhook ?? []).map((outcomeOf, i) =>
    newEvent<WebhookEvent>({
      ...meta(o.companyId, webhookId, 'webhook-dispatcher', t(60 + i * 10)),
      event: {
        $case: 'webhookAttempted',
        value: {
          kind: 'message.status',
          subjectId: id,
          attempt: i + 1,
          url: 'https://hooks.example/mds',
          statusCode: outcomeOf === 'succeeded' ? 200 : 503,
          latencyMs: 12,
          outcome: outcomeOf === 'succeeded' ? 1 : 2,
          error: outcomeOf === 'succeeded' ? '' : 'HTTP 503',
          responseExcerpt: outcomeOf === 'succeeded' ? 'ok' : 'busy',
          nextAttemptAt: outcomeOf === 'succeeded' ? undefined : t(5_060),
          endpointId: o.endpointId ?? '',
        },
      },
    }),
  );
  return {
    id,
    webhookId,
    message,
    delivery,
    deliveryTopic: deliveryTopic(maxChannel ? 'max' : 'telegram'),
    webhook,
  };
}

/** Publishes a story's events to their topics, in the order the services would. */
export async function publishStory(publisher: EventPublisher, story: ReturnType<typeof messageStory>) {
  await publisher.publish([
    { topic: topics.message, key: story.id, record: story.message[0]! },
    {
      topic: story.deliveryTopic,
      key: story.delivery.metadata.streamId,
      record: story.delivery,
    },
    ...story.message.slice(1).map((record) => ({ topic: topics.message, key: story.id, record })),
    ...story.webhook.map((record) => ({ topic: topics.webhook, key: story.webhookId, record })),
  ] as never);
}
