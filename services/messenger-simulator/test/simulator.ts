// Test helpers: a simulator on 127.0.0.1 with a free port, and a small client of its control API.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { expect } from 'vitest';
import { createLogger } from '@mds/logging';
import { loadSimulatorConfig } from '../src/config.js';
import { startSimulatorServer, type SimulatorServer } from '../src/server.js';

export interface BotView {
  id: number;
  messenger: 'telegram' | 'max';
  username: string;
  token: string;
  api_root: string;
}

export interface PersonView {
  id: number;
  phone_number: string;
  telegram_user_id: number;
  max_user_id: number;
  chats: { bot_id: number; chat_id: number; status: string }[];
}

export interface TestSimulator {
  base: string;
  server: SimulatorServer;
  control: ControlClient;
  close(): Promise<void>;
}

const running: TestSimulator[] = [];

/** Starts a simulator; `env` overrides settings. Every one started is closed by `closeAll`. */
export async function startSimulator(env: Record<string, string> = {}): Promise<TestSimulator> {
  const config = loadSimulatorConfig({
    HTTP_HOST: '127.0.0.1',
    HTTP_PORT: '0',
    LOG_LEVEL: 'silent',
    WEBHOOK_RETRY_DELAYS_MS: '50,100',
    WEBHOOK_TIMEOUT_MS: '2000',
    ...env,
  });
  const server = await startSimulatorServer({
    config,
    logger: createLogger({ service: 'test', level: 'silent' }),
  });
  const sim: TestSimulator = {
    base: server.url,
    server,
    control: new ControlClient(server.url),
    close: () => server.close(),
  };
  running.push(sim);
  return sim;
}

export async function closeAll(): Promise<void> {
  while (running.length) await running.pop()!.close();
}

export class ControlError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`control call failed with ${status}: ${JSON.stringify(body)}`);
  }
}

/** The status and body of a control call expected to fail (fails the test when it succeeds). */
export async function controlFailure(call: Promise<unknown>): Promise<{ status: number; body: unknown }> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ControlError);
  const { status, body } = error as ControlError;
  return { status, body };
}

export class ControlClient {
  constructor(private readonly base: string) {}

  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await fetch(`${this.base}/control${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    const parsed: unknown = text ? JSON.parse(text) : undefined;
    if (!res.ok) throw new ControlError(res.status, parsed);
    return parsed as T;
  }

  createBot(messenger: 'telegram' | 'max', username: string, name?: string): Promise<BotView> {
    return this.call('POST', '/bots', { messenger, username, ...(name ? { name } : {}) });
  }

  createPerson(phone: string, firstName: string, extra: Record<string, string> = {}): Promise<PersonView> {
    return this.call('POST', '/people', { phone_number: phone, first_name: firstName, ...extra });
  }

  act<T = { updates: unknown[] }>(personId: number, body: Record<string, unknown>): Promise<T> {
    return this.call('POST', `/people/${personId}/actions`, body);
  }

  async messages(personId: number): Promise<Record<string, unknown>[]> {
    return (await this.call<{ messages: Record<string, unknown>[] }>('GET', `/people/${personId}/messages`))
      .messages;
  }

  addFault(fault: Record<string, unknown>): Promise<{ id: number }> {
    return this.call('POST', '/faults', fault);
  }
}

/** A person who started the bot and shared their own contact: the bot can message them. */
export async function reachablePerson(control: ControlClient, bot: BotView, phone: string, name = 'Ivan') {
  const person = await control.createPerson(phone, name);
  await control.act(person.id, { action: 'start', bot_id: bot.id });
  await control.act(person.id, { action: 'share_contact', bot_id: bot.id });
  return control.call<PersonView>('GET', `/people/${person.id}`);
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: unknown;
}

/** A webhook receiver on 127.0.0.1 answering with the statuses given, in order (then 200). */
export async function webhookReceiver(statuses: number[] = []) {
  const received: Received[] = [];
  const waiting: (() => void)[] = [];
  const server: Server = createServer((req, res) => {
    let data = '';
    req.on('data', (chunk: Buffer) => (data += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(data) as unknown });
      res.statusCode = statuses.shift() ?? 200;
      res.end('ok');
      waiting.splice(0).forEach((wake) => wake());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return {
    url,
    received,
    /** Resolves once at least `count` requests arrived (or rejects after `ms`). */
    async waitFor(count: number, ms = 5000): Promise<Received[]> {
      const deadline = Date.now() + ms;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`webhook got ${received.length} of ${count} requests`);
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          setTimeout(resolve, 50);
        });
      }
      return received;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

export async function getJson(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
}

/** A Standard Webhooks secret as the registry makes them. */
export const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

/** A `message.status` webhook body as the dispatcher sends it. */
export function statusBody(state = 'sent', extra: Record<string, string> = {}) {
  return JSON.stringify({
    type: 'message.status',
    event_id: randomUUID(),
    timestamp: new Date().toISOString(),
    state,
    ...extra,
  });
}

/** POSTs a webhook as the dispatcher does: signed with `secrets` (none: unsigned). */
export async function deliver(
  sim: { base: string },
  name: string,
  body: string,
  secrets: string[],
  at = new Date(),
) {
  const id = `msg_${randomBytes(16).toString('hex')}`;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (secrets.length) {
    headers['webhook-id'] = id;
    headers['webhook-timestamp'] = String(Math.floor(at.getTime() / 1000));
    headers['webhook-signature'] = secrets.map((s) => new Webhook(s).sign(id, at, body)).join(' ');
  }
  const res = await fetch(`${sim.base}/inspector/${name}/hooks`, { method: 'POST', headers, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, id };
}
