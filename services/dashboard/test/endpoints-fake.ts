// A stand-in for the webhook endpoints API of client-registry and webhook-dispatcher (issue 36), written from
// the shapes the lead's design fixes (EP-DESIGN.md), while those services build it. It sits in front of the
// real services: the endpoint routes it answers from memory, every other call goes through to the real one
// unchanged (headers, the dashboard's signed assertion, body). Once the services answer these routes, the stack
// drops it (startDashboardStack's `endpointsFake`) and the same tests run against them.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import {
  MAX_ENDPOINT_DESCRIPTION_LENGTH,
  MAX_ENDPOINT_RATE_LIMIT,
  MAX_WEBHOOK_ENDPOINTS,
  newWebhookEndpointId,
  WEBHOOK_EVENT_TYPES,
} from '@mds/contracts';
import type { EndpointView } from '../src/domain/views.js';

interface Stored extends Omit<EndpointView, 'secrets'> {
  secrets: { secret_id: string; secret: string; current: boolean; expires_at: string | null }[];
}

export interface EndpointsFake {
  registryUrl: string;
  dispatcherUrl: string;
  /** What the dispatcher does when an endpoint keeps failing: turns it off, automatically. */
  disableAutomatically(companyId: string, endpointId: string, reason: string): void;
  close(): Promise<void>;
}

const newSecret = () => ({
  secret_id: randomBytes(8).toString('hex'),
  secret: `whsec_${randomBytes(24).toString('base64')}`,
  current: true,
  expires_at: null as string | null,
});
const viewOf = (e: Stored): EndpointView => ({
  ...e,
  secrets: e.secrets.map(({ secret_id, current, expires_at }) => ({ secret_id, current, expires_at })),
});

type Answer = [number, unknown?];
const problem = (status: number, code: string, detail: string, errors?: unknown[]): Answer => [
  status,
  { type: 'about:blank', title: code, status, code, detail, ...(errors ? { errors } : {}) },
];
const notFound = (id: string) => problem(404, 'webhook_endpoint_not_found', `No endpoint ${id}.`);

/** The settings of an add or change, checked as the registry's design says; a problem when refused. */
function settings(body: Record<string, unknown>, adding: boolean): Partial<Stored> | Answer {
  const errors: { pointer: string; detail: string; code: string }[] = [];
  const out: Partial<Stored> = {};
  if (body.url !== undefined || adding) {
    if (typeof body.url !== 'string' || !/^https?:\/\/[^\s]+$/.test(body.url))
      errors.push({ pointer: '#/url', detail: 'an http(s) URL', code: 'invalid_url' });
    else out.url = body.url;
  }
  if (body.description !== undefined) {
    if (typeof body.description !== 'string' || body.description.length > MAX_ENDPOINT_DESCRIPTION_LENGTH)
      errors.push({ pointer: '#/description', detail: 'too long', code: 'too_long' });
    else out.description = body.description;
  }
  if (body.event_types !== undefined) {
    const types = body.event_types;
    if (!Array.isArray(types) || types.some((t) => !(WEBHOOK_EVENT_TYPES as readonly unknown[]).includes(t)))
      errors.push({ pointer: '#/event_types', detail: 'unknown event type', code: 'invalid_value' });
    else out.event_types = types as string[];
  }
  if (body.rate_limit_per_second !== undefined) {
    const r = body.rate_limit_per_second;
    if (r !== null && (typeof r !== 'number' || r < 1 || r > MAX_ENDPOINT_RATE_LIMIT))
      errors.push({ pointer: '#/rate_limit_per_second', detail: 'out of range', code: 'invalid_value' });
    else out.rate_limit_per_second = r;
  }
  return errors.length ? problem(422, 'validation_failed', 'Invalid endpoint.', errors) : out;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function forward(target: string, req: IncomingMessage, res: ServerResponse, body: Buffer) {
  const headers = Object.fromEntries(
    Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)),
  ) as Record<string, string>;
  const answer = await fetch(`${target}${req.url}`, {
    method: req.method!,
    headers,
    ...(body.length ? { body } : {}),
  });
  const type = answer.headers.get('content-type');
  res.writeHead(answer.status, type ? { 'content-type': type } : {});
  res.end(Buffer.from(await answer.arrayBuffer()));
}

function listen(handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<Server> {
  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ code: 'fake_failed', detail: String(error) }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const urlOf = (s: Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;

export async function startEndpointsFake(real: {
  registryUrl: string;
  dispatcherUrl: string;
}): Promise<EndpointsFake> {
  const companies = new Map<string, Stored[]>();
  const of = (companyId: string) => {
    let list = companies.get(companyId);
    if (!list) companies.set(companyId, (list = []));
    return list;
  };

  function registry(method: string, companyId: string, rest: string, body: Record<string, unknown>): Answer {
    const list = of(companyId);
    const [id, action] = rest.split('/').filter(Boolean);
    if (!id) {
      if (method === 'GET') return [200, { endpoints: list.map(viewOf) }];
      if (method !== 'POST') return problem(405, 'method_not_allowed', method);
      if (list.length >= MAX_WEBHOOK_ENDPOINTS)
        return problem(409, 'webhook_endpoint_limit', `At most ${MAX_WEBHOOK_ENDPOINTS} endpoints.`);
      const s = settings(body, true);
      if (Array.isArray(s)) return s;
      const secret = newSecret();
      const endpoint: Stored = {
        id: newWebhookEndpointId(),
        url: s.url!,
        description: s.description ?? '',
        event_types: s.event_types ?? [],
        enabled: body.enabled !== false,
        disabled_reason: null,
        disabled_automatically: false,
        rate_limit_per_second: s.rate_limit_per_second ?? null,
        secrets: [secret],
      };
      list.push(endpoint);
      return [201, { endpoint: viewOf(endpoint), secret: secret.secret }];
    }
    const endpoint = list.find((e) => e.id === id);
    if (!endpoint) return notFound(id);
    const route = `${method} ${action ?? ''}`;
    switch (route) {
      case 'GET ':
        return [200, viewOf(endpoint)];
      case 'PATCH ': {
        const s = settings(body, false);
        if (Array.isArray(s)) return s;
        Object.assign(endpoint, s);
        return [200, viewOf(endpoint)];
      }
      case 'DELETE ':
        list.splice(list.indexOf(endpoint), 1);
        return [204];
      case 'GET secrets':
        return [
          200,
          {
            secrets: endpoint.secrets.map(({ secret_id, secret, expires_at }) => ({
              secret_id,
              secret,
              expires_at,
            })),
          },
        ];
      case 'POST rotate-secret': {
        const secret = newSecret();
        endpoint.secrets = [
          secret,
          ...endpoint.secrets
            .filter((s) => s.current)
            .map((s) => ({
              ...s,
              current: false,
              expires_at: new Date(Date.now() + 86_400_000).toISOString(),
            })),
        ];
        return [200, { secret: secret.secret, endpoint: viewOf(endpoint) }];
      }
      case 'POST enable':
        Object.assign(endpoint, { enabled: true, disabled_reason: null, disabled_automatically: false });
        return [200, viewOf(endpoint)];
      case 'POST disable':
        Object.assign(endpoint, {
          enabled: false,
          disabled_reason: typeof body.reason === 'string' ? body.reason : 'disabled by a person',
          disabled_automatically: false,
        });
        return [200, viewOf(endpoint)];
      default:
        return problem(404, 'not_found', route);
    }
  }

  /** A signed webhook.test to the endpoint, answered as the dispatcher's test-event answers. */
  async function testEvent(companyId: string, body: Record<string, unknown>): Promise<Answer> {
    const id = typeof body.endpoint_id === 'string' ? body.endpoint_id : undefined;
    const endpoint = id ? of(companyId).find((e) => e.id === id) : of(companyId)[0];
    if (!endpoint) return notFound(String(id));
    const webhookId = `msg_${randomBytes(16).toString('hex')}`;
    const payload = JSON.stringify({
      type: 'webhook.test',
      timestamp: new Date().toISOString(),
      data: { company_id: companyId, endpoint_id: endpoint.id },
    });
    const at = new Date();
    const signature = new Webhook(endpoint.secrets[0]!.secret).sign(webhookId, at, payload);
    const headers = {
      'content-type': 'application/json',
      'webhook-id': webhookId,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': signature,
    };
    const started = Date.now();
    const request = { url: endpoint.url, headers, body: payload };
    try {
      const answer = await fetch(endpoint.url, { method: 'POST', headers, body: payload });
      const excerpt = (await answer.text()).slice(0, 1000);
      return [
        200,
        {
          webhook_id: webhookId,
          request,
          response: {
            outcome: answer.ok ? 'succeeded' : 'failed',
            status_code: answer.status,
            latency_ms: Date.now() - started,
            excerpt,
            error: null,
          },
        },
      ];
    } catch (error) {
      return [
        200,
        {
          webhook_id: webhookId,
          request,
          response: {
            outcome: 'no_response',
            status_code: null,
            latency_ms: Date.now() - started,
            excerpt: '',
            error: (error as Error).message,
          },
        },
      ];
    }
  }

  const reply = (res: ServerResponse, [status, body]: Answer) => {
    res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };
  const parse = (raw: Buffer): Record<string, unknown> =>
    raw.length ? (JSON.parse(raw.toString()) as Record<string, unknown>) : {};

  const registryServer = await listen(async (req, res) => {
    const raw = await readBody(req);
    const m = /^\/admin\/v1\/companies\/([^/]+)\/webhook\/endpoints(\/.*)?$/.exec(req.url ?? '');
    if (!m) return forward(real.registryUrl, req, res, raw);
    reply(res, registry(req.method!, m[1]!, m[2] ?? '', parse(raw)));
  });
  const dispatcherServer = await listen(async (req, res) => {
    const raw = await readBody(req);
    const m = /^\/admin\/v1\/companies\/([^/]+)\/test-event$/.exec(req.url ?? '');
    const body = m ? parse(raw) : {};
    // Only a test event naming an endpoint is the new API's; without one it is today's, the real dispatcher's.
    if (!m || typeof body.endpoint_id !== 'string') return forward(real.dispatcherUrl, req, res, raw);
    reply(res, await testEvent(m[1]!, body));
  });
  return {
    registryUrl: urlOf(registryServer),
    dispatcherUrl: urlOf(dispatcherServer),
    disableAutomatically(companyId, endpointId, reason) {
      const endpoint = of(companyId).find((e) => e.id === endpointId);
      if (!endpoint) throw new Error(`no endpoint ${endpointId}`);
      Object.assign(endpoint, { enabled: false, disabled_reason: reason, disabled_automatically: true });
    },
    async close() {
      for (const s of [registryServer, dispatcherServer]) {
        s.closeAllConnections();
        await new Promise((r) => s.close(r));
      }
    },
  };
}
