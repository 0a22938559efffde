import { execFile } from 'node:child_process';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { MdsClient, MdsNotFoundError, type SendRequest } from '@mds/client';
import { Webhook } from 'standardwebhooks';
import { freePort, repoRoot } from '@mds/local-infra';
import { eventually } from '@mds/local-infra/testing';
import { BUILT_IN_MESSENGERS, messengers } from '@mds/contracts';
import { senderService, simulatorAndRegistry, Stack, type ServiceDefinition } from './harness.js';

const run = promisify(execFile);

/**
 * The whole delivery service as real processes, as `npm start` runs it: the simulator, client-registry,
 * both senders, webhook-dispatcher, the gateway and the dashboard. `env` adds settings per service (by name).
 */
export function deliveryServices(o: {
  grpcPort: number;
  /** The dashboard's operator listener (a free port of its own unless given). */
  operatorPort?: number;
  adminToken: string;
  env?: Partial<Record<string, Record<string, string>>>;
}): ServiceDefinition[] {
  const registry = `127.0.0.1:${o.grpcPort}`;
  // As in a cluster: each caller of the registry's gRPC has its own token, allowed only its RPCs.
  const tokens = Object.fromEntries(
    ['gateway', ...messengers().map((m) => m.sender), 'webhook-dispatcher', 'dashboard'].map((c) => [
      c,
      randomBytes(24).toString('base64url'),
    ]),
  );
  const callers = Object.entries(tokens)
    .map(([caller, token]) => `${caller}:${createHash('sha256').update(token).digest('hex')}`)
    .join(',');
  const own = (name: string) => ({
    ...(tokens[name] ? { INTERNAL_GRPC_TOKEN: tokens[name] } : {}),
    ...o.env?.[name],
  });
  const [simulator, clientRegistry] = simulatorAndRegistry(o);
  // The dashboard's identity: it signs, the registry, the dispatcher and the gateway verify.
  const identity = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' });
  return [
    { ...simulator!, env: own('messenger-simulator') },
    {
      ...clientRegistry!,
      env: (ports) => ({
        ...(clientRegistry!.env as (p: Record<string, number>) => Record<string, string>)(ports),
        REGISTRY_CALLERS: callers,
        DASHBOARD_PUBLIC_KEYS: identity.x!,
        REGISTRY_REQUIRE_CALLERS: 'true',
        ...own('client-registry'),
      }),
    },
    // A messenger a plugin registered (MESSENGER_PLUGINS) is in the test's catalogue too, and has its sender.
    ...messengers().map((m) =>
      senderService(m, (ports) => ({
        REGISTRY_GRPC_ADDRESS: registry,
        ...(BUILT_IN_MESSENGERS.some((builtIn) => builtIn.name === m.name)
          ? { MESSENGER_API_BASE: `http://127.0.0.1:${ports['messenger-simulator']}` }
          : {}),
        UPDATES_POLL_TIMEOUT_S: '1',
        // A bot registered a moment ago is polled within a second (30 s by default).
        BOTS_REFRESH_MS: '1000',
        ...own(m.sender),
      })),
    ),
    {
      name: 'webhook-dispatcher',
      env: {
        REGISTRY_GRPC_ADDRESS: registry,
        DISPATCHER_ADMIN_TOKEN: o.adminToken,
        DASHBOARD_PUBLIC_KEYS: identity.x!,
        WEBHOOK_SSRF_ALLOWLIST: '127.0.0.1/32',
        WEBHOOK_ENDPOINT_CACHE_TTL_MS: '500',
        WEBHOOK_POLL_INTERVAL_MS: '100',
        ...own('webhook-dispatcher'),
      },
    },
    {
      name: 'gateway',
      env: {
        // The dashboard's assertions stand in for an API key when it acts for a member.
        DASHBOARD_PUBLIC_KEYS: identity.x!,
        REGISTRY_GRPC_ADDRESS: registry,
        API_KEY_CACHE_TTL_MS: '1000',
        ...own('gateway'),
      },
    },
    {
      name: 'dashboard',
      // The operator's API, apart from the public port.
      ...(o.operatorPort ? { listens: ['OPERATOR_PORT'] } : {}),
      env: (ports) => ({
        REGISTRY_URL: `http://127.0.0.1:${ports['client-registry']}`,
        DISPATCHER_URL: `http://127.0.0.1:${ports['webhook-dispatcher']}`,
        DASHBOARD_SIGNING_KEY: identity.d!,
        OPERATOR_PORT: String(o.operatorPort ?? 0),
        GATEWAY_URL: `http://127.0.0.1:${ports.gateway}`,
        // Person keys: the dashboard shows the numbers and texts sealed in events.
        REGISTRY_GRPC_ADDRESS: registry,
        DASHBOARD_ADMIN_TOKEN: o.adminToken,
        PUBLIC_URL: `http://127.0.0.1:${ports.dashboard}`,
        LIVE_REFRESH_MS: '500',
        ...own('dashboard'),
      }),
    },
  ];
}

/** Production's shape: two replicas of every service (the simulator: one), three Kafka brokers. */
export const PRODUCTION_TOPOLOGY = { replicas: 2, brokers: 3 } as const;

/**
 * Starts the whole delivery service (see `deliveryServices`) on its own topics and database; with
 * `replicas` and `brokers`, several processes of every service on a Kafka cluster of its own (see `Stack`).
 */
export async function startDeliveryStack(
  o: {
    adminToken?: string;
    env?: Partial<Record<string, Record<string, string>>>;
    replicas?: number;
    brokers?: number;
    /** Services left out by name (a benchmark of the pipeline has no dashboard). */
    without?: readonly string[];
    /** Settings of every service: a messenger plugin's MESSENGER_PLUGINS and what the plugin reads. */
    common?: Record<string, string>;
  } = {},
): Promise<{ stack: Stack; sandbox: Sandbox }> {
  const adminToken = o.adminToken ?? `e2e-admin-${randomBytes(12).toString('hex')}`;
  const grpcPort = await freePort();
  const operatorPort = await freePort();
  const stack = await Stack.start({
    env: { INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url'), ...o.common },
    services: deliveryServices({
      grpcPort,
      operatorPort,
      adminToken,
      ...(o.env ? { env: o.env } : {}),
    }).filter((service) => !o.without?.includes(service.name)),
    ...(o.replicas ? { replicas: o.replicas } : {}),
    ...(o.brokers ? { brokers: o.brokers } : {}),
  });
  return {
    stack,
    sandbox: new Sandbox(stack, adminToken, '127.0.0.1', `http://127.0.0.1:${operatorPort}`),
  };
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
    what: string,
  ) {
    super(`${what}: ${status} ${body}`);
  }
}

async function request<T>(url: string, method: string, headers: Record<string, string>, body?: unknown) {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) throw new HttpError(response.status, text, `${method} ${url}`);
  return (text ? JSON.parse(text) : {}) as T;
}

export type Messenger = 'telegram' | 'max';

/** What `mds-admin clients forget --json` prints: every number of the person it forgot, as subject ids. */
export interface ForgetAnswer {
  subject_id: string;
  subject_ids: string[];
  numbers_forgotten: number;
  keys_destroyed: number;
  links_removed: number;
}

let phoneCounter = Math.floor(Math.random() * 5_000_000);

/** A mobile number (11 digits, international, valid for libphonenumber) no other call in this process gives. */
export function uniquePhone(): string {
  phoneCounter = (phoneCounter + 1) % 10_000_000;
  return `7916${String(phoneCounter).padStart(7, '0')}`;
}

/** A public API answer: status, headers and the parsed JSON body (undefined when there is none). */
export interface ApiAnswer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** A message's or request's state as `GET /api/v1/events/{event_id}` answers it. */
export interface EventStateBody {
  event_id: string;
  kind: 'message' | 'change_phone' | 'client_check';
  state: string;
  accepted_at: string | null;
  finished_at: string | null;
  updated_at: string;
  error_code?: string;
  error_description?: string;
  history: { type: string; at: string; event_id: string }[];
  [key: string]: unknown;
}

export interface SimulatedBot {
  /** The simulator's id of the bot (for people's actions and inboxes). */
  simulatorId: number;
  /** client-registry's id of the bot. */
  botId: string;
  messenger: Messenger;
  name: string;
  token: string;
}

export interface SimulatedPerson {
  id: number;
  /** The person's number as the simulator stores it (digits); the same as `phone_number`. */
  phone: string;
  phone_number: string;
  telegram_user_id: number;
  max_user_id: number;
}

export interface ReceivedMessage {
  text: string;
  buttons?: unknown;
  [key: string]: unknown;
}

export interface DemoCompany {
  companyId: string;
  apiKey: string;
  /** The company's webhook signing secrets (`whsec_...`), current first. */
  secrets: string[];
}

/** Where the services answer: a `Stack` of processes, or containers (`test-e2e/src/containers`). */
export interface ServiceAddresses {
  url(name: string): string;
}

/** What a company, a person and the operator do to a running delivery stack, by its public APIs. */
export class Sandbox {
  private readonly receivers: WebhookReceiver[] = [];

  /**
   * `webhookHost` is the address the webhook dispatcher reaches this machine's loopback at (127.0.0.1 when it
   * runs here as a process): company webhook URLs are registered with it.
   */
  constructor(
    readonly stack: ServiceAddresses,
    readonly adminToken: string,
    readonly webhookHost = '127.0.0.1',
    /** The dashboard's operator API (its own listener, never the public port), where the stack has one. */
    readonly operatorUrl?: string,
  ) {}

  /** Closes the webhook receivers this sandbox started (the stack is the caller's to stop). */
  async close(): Promise<void> {
    await Promise.all(this.receivers.splice(0).map((r) => r.close()));
  }

  get gatewayUrl(): string {
    return this.stack.url('gateway');
  }

  get dashboardUrl(): string {
    return this.stack.url('dashboard');
  }

  /**
   * The operator's `mds-admin members add`: a dashboard member of the company (its owner unless told), as the
   * real CLI makes them; answers the one-time link the CLI printed.
   */
  async member(companyId: string, email: string, role = 'owner'): Promise<string> {
    const { stdout } = await run(
      process.execPath,
      [
        join(repoRoot(), 'services/client-registry/bin/mds-admin.js'),
        '--json',
        'members',
        'add',
        companyId,
        '--email',
        email,
        '--role',
        role,
      ],
      {
        env: {
          ...process.env,
          DASHBOARD_URL: this.operatorUrl ?? `${this.dashboardUrl}:no-operator-listener`,
          DASHBOARD_ADMIN_TOKEN: this.adminToken,
        },
      },
    );
    return (JSON.parse(stdout) as { link: string }).link;
  }

  /**
   * A new owner of the company signed in to the dashboard through their one-time link (set `password`): how to
   * call the dashboard's API as them, and the secrets of the session (link token, session cookie, CSRF token,
   * password).
   */
  async dashboardSession(companyId: string, password: string) {
    const link = await this.member(companyId, `owner-${randomBytes(4).toString('hex')}@e2e.test`);
    const token = link.slice(link.indexOf('#') + 1);
    const redeemed = await fetch(`${this.dashboardUrl}/api/links/redeem`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, password, name: 'E2E Owner' }),
    });
    if (redeemed.status !== 200) throw new HttpError(redeemed.status, await redeemed.text(), 'redeem');
    const cookie = redeemed.headers.getSetCookie()[0]!.split(';')[0]!;
    const { csrf_token: csrf } = (await redeemed.json()) as { csrf_token: string };
    return {
      secrets: [token, cookie.slice(cookie.indexOf('=') + 1), csrf, password],
      call: (method: string, path: string) =>
        fetch(`${this.dashboardUrl}/api${path}`, { method, headers: { cookie, 'x-csrf-token': csrf } }),
    };
  }

  /** The operator's `mds-admin clients forget`: erases a person of the company; answers what the CLI printed. */
  async forgetClient(companyId: string, phone: string): Promise<ForgetAnswer> {
    const { stdout } = await run(
      process.execPath,
      [
        join(repoRoot(), 'services/client-registry/bin/mds-admin.js'),
        '--json',
        'clients',
        'forget',
        companyId,
        phone,
      ],
      {
        env: {
          ...process.env,
          REGISTRY_URL: this.stack.url('client-registry'),
          REGISTRY_ADMIN_TOKEN: this.adminToken,
        },
      },
    );
    return JSON.parse(stdout) as ForgetAnswer;
  }

  admin<T>(method: string, path: string, body?: unknown): Promise<T> {
    return request<T>(
      `${this.stack.url('client-registry')}/admin/v1${path}`,
      method,
      { authorization: `Bearer ${this.adminToken}` },
      body,
    );
  }

  simulator<T>(method: string, path: string, body?: unknown): Promise<T> {
    return request<T>(`${this.stack.url('messenger-simulator')}${path}`, method, {}, body);
  }

  /** The public API as a company calls it; answers the raw response (status and body are the test's business). */
  api(apiKey: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${this.gatewayUrl}/api/v1${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  /** A company with an API key and, when `webhookUrl` is given, a webhook endpoint and its secrets. */
  async company(name: string, webhookUrl?: string): Promise<DemoCompany> {
    const { company_id: companyId } = await this.admin<{ company_id: string }>('POST', '/companies', {
      name,
    });
    const { api_key: apiKey } = await this.admin<{ api_key: string }>(
      'POST',
      `/companies/${companyId}/api-keys`,
      // Every scope: the flows call change_phone too.
      { label: 'e2e', scopes: ['send', 'check', 'change_phone', 'read'] },
    );
    let secrets: string[] = [];
    if (webhookUrl) {
      await this.admin('PUT', `/companies/${companyId}/webhook`, { url: webhookUrl });
      const listed = await this.admin<{ secrets: { secret: string }[] }>(
        'GET',
        `/companies/${companyId}/webhook/secrets`,
      );
      secrets = listed.secrets.map((s) => s.secret);
    }
    return { companyId, apiKey, secrets };
  }

  /**
   * A company whose webhook endpoint is a fresh `WebhookReceiver` verifying with the company's secrets
   * (closed by `close()`).
   */
  async companyWithWebhooks(name: string): Promise<DemoCompany & { webhooks: WebhookReceiver }> {
    const webhooks = await new WebhookReceiver().start();
    this.receivers.push(webhooks);
    const company = await this.company(name, webhooks.url.replace('127.0.0.1', this.webhookHost));
    webhooks.verifyWith(company.secrets);
    return { ...company, webhooks };
  }

  /**
   * A webhook endpoint of the company (the registry's endpoints API) at a fresh `WebhookReceiver` that verifies
   * with that endpoint's own secret only (closed by `close()`).
   */
  async endpoint(
    companyId: string,
    settings: { description?: string; event_types?: string[]; rate_limit_per_second?: number } = {},
  ): Promise<{ endpointId: string; secret: string; webhooks: WebhookReceiver }> {
    const webhooks = await new WebhookReceiver().start();
    this.receivers.push(webhooks);
    const created = await this.admin<{ endpoint: { id: string }; secret: string }>(
      'POST',
      `/companies/${companyId}/webhook/endpoints`,
      { url: webhooks.url.replace('127.0.0.1', this.webhookHost), ...settings },
    );
    webhooks.verifyWith([created.secret]);
    return { endpointId: created.endpoint.id, secret: created.secret, webhooks };
  }

  /** A bot in the simulator, registered to the company (its default for the messenger unless told otherwise). */
  async bot(
    companyId: string,
    messenger: Messenger,
    name: string,
    makeDefault = true,
  ): Promise<SimulatedBot> {
    // Telegram's rule for usernames (the simulator applies it to both): 5-32 letters, digits or _,
    // starting with a letter, ending in "bot".
    const stem =
      name
        .replace(/[^A-Za-z0-9_]/g, '_')
        .replace(/^[^A-Za-z]+/, '')
        .slice(0, 20) || 'e2e';
    const username = `${stem}_${randomBytes(3).toString('hex')}_bot`;
    const created = await this.simulator<{ id: number; token: string }>('POST', '/control/bots', {
      messenger,
      username,
      name,
    });
    const { bot_id: botId } = await this.admin<{ bot_id: string }>('POST', `/companies/${companyId}/bots`, {
      messenger,
      name,
      token: created.token,
      default: makeDefault,
    });
    return { simulatorId: created.id, botId, messenger, name, token: created.token };
  }

  async person(phone: string, firstName = 'Test'): Promise<SimulatedPerson> {
    const created = await this.simulator<Omit<SimulatedPerson, 'phone'>>('POST', '/control/people', {
      phone_number: phone,
      first_name: firstName,
    });
    return { ...created, phone: created.phone_number };
  }

  act(person: SimulatedPerson, action: string, bot?: SimulatedBot, extra: Record<string, unknown> = {}) {
    return this.simulator('POST', `/control/people/${person.id}/actions`, {
      action,
      ...(bot ? { bot_id: bot.simulatorId } : {}),
      ...extra,
    });
  }

  /** The person starts the bot and shares their own contact: how a person becomes reachable. */
  async startAndShareContact(person: SimulatedPerson, bot: SimulatedBot): Promise<void> {
    await this.act(person, 'start', bot);
    await this.act(person, 'share_contact', bot);
  }

  /**
   * A new person (a number nobody else has) who starts the bot and shares their contact; answers once the
   * registry holds the reachable link (its admin API), so sends to the number route to the person.
   */
  async linkedPerson(companyId: string, bot: SimulatedBot, firstName = 'Test'): Promise<SimulatedPerson> {
    const person = await this.person(uniquePhone(), firstName);
    await this.startAndShareContact(person, bot);
    await this.waitForLink(companyId, person.phone, bot, true);
    return person;
  }

  /** The registry's links of a number (admin API), as the operator sees them. */
  client(companyId: string, phone: string) {
    return this.admin<{
      phone_number: string;
      exists: boolean;
      links: {
        messenger: Messenger;
        bot_id: string;
        bot_name: string;
        chat_id: string;
        reachable: boolean;
      }[];
    }>('GET', `/companies/${companyId}/clients/${phone}`);
  }

  /** Waits (bounded) until the registry links the number to the bot with this reachability. */
  waitForLink(companyId: string, phone: string, bot: SimulatedBot, reachable: boolean, timeoutMs = 60_000) {
    return eventually(
      `${phone} linked to ${bot.name} (reachable: ${reachable})`,
      async () =>
        (await this.client(companyId, phone)).links.find(
          (l) => l.bot_id === bot.botId && l.reachable === reachable,
        ),
      timeoutMs,
    );
  }

  /** A public API call with its answer parsed (`GET` when there is no body). */
  async call<T = Record<string, unknown>>(
    apiKey: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiAnswer<T>> {
    const response = await this.api(apiKey, path, body, headers);
    const text = await response.text();
    return {
      status: response.status,
      headers: response.headers,
      body: (text ? JSON.parse(text) : undefined) as T,
    };
  }

  /** The public API as a company's code calls it: the SDK (@mds/client), with the company's API key. */
  sdk(apiKey: string): MdsClient {
    return new MdsClient({ baseUrl: this.gatewayUrl, apiKey });
  }

  /** POST /api/v1/send through the SDK, which must accept it: answers the event_id. */
  async send(
    apiKey: string,
    message: SendRequest,
    options: { idempotencyKey?: string } = {},
  ): Promise<string> {
    return (await this.sdk(apiKey).send(message, options)).event_id;
  }

  /** The state of an event_id through the read API, once it is `finished` (not `new`), bounded. */
  finishedState(apiKey: string, eventId: string, timeoutMs = 60_000): Promise<EventStateBody> {
    return eventually(
      `the outcome of ${eventId} in the read API`,
      async () => {
        const state = await this.sdk(apiKey)
          .getEvent(eventId)
          .catch((error: unknown) => {
            // Not yet in the read model: a moment after its 202.
            if (error instanceof MdsNotFoundError) return undefined;
            throw error;
          });
        return state && state.state !== 'new' ? state : undefined;
      },
      timeoutMs,
    );
  }

  /** Scripts a failure of the bot APIs in the simulator (see its control API); answers the fault's id. */
  fault(fault: {
    kind: 'latency' | '5xx' | 'timeout' | '429' | 'drop-after-delivery';
    bot?: SimulatedBot;
    method?: string;
    count?: number;
    ms?: number;
    status?: number;
    retry_after?: number;
  }): Promise<{ id: number; remaining: number }> {
    const { bot, ...rest } = fault;
    return this.simulator('POST', '/control/faults', {
      ...rest,
      ...(bot ? { bot_id: bot.simulatorId } : {}),
    });
  }

  /** Removes a scripted fault before it has hit all its calls (one already used up is no error). */
  async clearFault(id: number): Promise<void> {
    await this.simulator('DELETE', `/control/faults/${id}`).catch((error: unknown) => {
      if (!(error instanceof HttpError && error.status === 404)) throw error;
    });
  }

  /** The last bot API calls the simulator served for a bot, oldest first. */
  async botRequests(
    bot: SimulatedBot,
  ): Promise<
    { at: string; method: string; params: Record<string, unknown>; status: number; error: string | null }[]
  > {
    return (
      await this.simulator<{
        requests: {
          at: string;
          method: string;
          params: Record<string, unknown>;
          status: number;
          error: string | null;
        }[];
      }>('GET', `/control/requests?bot_id=${bot.simulatorId}&limit=1000`)
    ).requests;
  }

  async inbox(person: SimulatedPerson, bot?: SimulatedBot): Promise<ReceivedMessage[]> {
    const query = bot ? `?bot_id=${bot.simulatorId}` : '';
    return (
      await this.simulator<{ messages: ReceivedMessage[] }>(
        'GET',
        `/control/people/${person.id}/messages${query}`,
      )
    ).messages;
  }
}

export interface ReceivedWebhook {
  headers: Record<string, string>;
  body: string;
  /** The parsed body, when it is JSON. */
  payload: Record<string, unknown> | undefined;
  /** Whether the `standardwebhooks` library verifies it with the company's secrets (any of them). */
  verified: boolean;
  receivedAt: number;
}

/** What a webhook endpoint answers: a status, or a status and a body. */
export type WebhookAnswer = number | { status: number; body?: string | Buffer };

/**
 * A company's webhook endpoint: a real HTTP server on 127.0.0.1 that answers 200 (or what `respond`
 * says, at once or when its promise settles) and verifies every request with the `standardwebhooks`
 * library on arrival.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private server: Server | undefined;
  private secrets: string[] = [];
  /** Answers a status (and a body) per request, or a promise of one (a slow endpoint); 200 by default. */
  respond: (webhook: ReceivedWebhook) => WebhookAnswer | Promise<WebhookAnswer> = () => 200;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]),
        );
        const webhook: ReceivedWebhook = {
          headers,
          body,
          payload: parseJson(body),
          verified: this.secrets.some((secret) => verifies(secret, body, headers)),
          receivedAt: Date.now(),
        };
        this.received.push(webhook);
        void Promise.resolve(this.respond(webhook)).then((answer) => {
          const { status, body } = typeof answer === 'number' ? { status: answer, body: undefined } : answer;
          // The dispatcher may have given up on a slow answer and closed the connection meanwhile.
          if (!res.destroyed) res.writeHead(status).end(body);
        });
      });
    });
    this.server.keepAliveTimeout = 5_000;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/webhooks`;
    return this;
  }

  verifyWith(secrets: string[]): void {
    this.secrets = secrets;
  }

  /** Webhooks about one event (a message, a check, a phone change): `event_id` in the body. */
  about(eventId: string): ReceivedWebhook[] {
    return this.received.filter((w) => w.payload?.event_id === eventId);
  }

  /** Waits (bounded) for the first webhook about the event, and answers it. */
  waitFor(eventId: string, timeoutMs = 60_000): Promise<ReceivedWebhook> {
    return eventually(`a webhook about ${eventId}`, () => this.about(eventId)[0], timeoutMs);
  }

  close(): Promise<void> {
    if (!this.server) return Promise.resolve();
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server!.close(() => resolve()));
  }
}

function parseJson(body: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function verifies(secret: string, body: string, headers: Record<string, string>): boolean {
  try {
    new Webhook(secret).verify(body, headers);
    return true;
  } catch {
    return false;
  }
}
