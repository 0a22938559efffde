import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';
import { startDeliveryStack, uniquePhone, WebhookReceiver, type Sandbox } from './sandbox.js';

// One message followed across every hop in one trace: the services export their spans over OTLP/HTTP
// (JSON) to a receiver in this process, as they would to a collector. The trace starts where the caller's
// does (it sends a traceparent, as an instrumented client would), goes through the gateway's accept, Kafka,
// the registry's routing, Kafka, the sender's journal and its messenger call, Kafka, the dispatcher's
// deliveries table, and ends at the company's webhook endpoint, which gets the trace's traceparent too.

const WAIT_MS = 60_000;
const TRACED_SERVICES = [
  'messenger-simulator',
  'client-registry',
  'telegram-sender',
  'max-sender',
  'webhook-dispatcher',
  'gateway',
  'dashboard',
];

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  statusCode: number;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpTraces {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: OtlpAttribute[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}

const valueOf = (v: OtlpValue) => v.stringValue ?? v.intValue ?? v.boolValue ?? v.doubleValue;
const attributesOf = (list: OtlpAttribute[] = []) =>
  Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** An OTLP/HTTP receiver (JSON encoding) on loopback: what a collector's otlp receiver does, keeping spans. */
class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every export as it came (resource, spans, their attributes, events and status): what a collector keeps. */
  readonly bodies: string[] = [];
  /** Requests it could not read (it answers them 400, as a collector would). */
  readonly refused: string[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (
          req.method !== 'POST' ||
          req.url !== '/v1/traces' ||
          !/json/.test(req.headers['content-type'] ?? '')
        ) {
          this.refused.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
          res.writeHead(400).end();
          return;
        }
        const raw = Buffer.concat(chunks).toString('utf8');
        this.bodies.push(raw);
        const body = JSON.parse(raw) as OtlpTraces;
        for (const rs of body.resourceSpans ?? []) {
          const service = String(attributesOf(rs.resource?.attributes)['service.name']);
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              this.spans.push({
                service,
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId ?? '',
                name: s.name,
                kind: s.kind,
                attributes: attributesOf(s.attributes),
                statusCode: s.status?.code ?? 0,
              });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

let stack: Stack;
let sandbox: Sandbox;
const receiver = new OtlpReceiver();

beforeAll(async () => {
  await receiver.start();
  const otel = {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    // Spans go out within a fifth of a second (5 s by default).
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=e2e',
  };
  const env: Record<string, Record<string, string>> = Object.fromEntries(
    TRACED_SERVICES.map((name) => [name, otel]),
  );
  // A failed webhook is tried again a second later (from the deliveries table).
  env['webhook-dispatcher'] = { ...otel, WEBHOOK_RETRY_SCHEDULE_SECONDS: '1,1,1' };
  ({ stack, sandbox } = await startDeliveryStack({ env }));
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
  await receiver.close();
});

describe('one trace per message', () => {
  it('follows a message from the 202 to its webhook: a span per hop, each the child of the one before', async () => {
    const company = await sandbox.companyWithWebhooks('traced');
    const bot = await sandbox.bot(company.companyId, 'telegram', 'traced-telegram');
    const person = await sandbox.linkedPerson(company.companyId, bot);

    // The caller's own trace: the message's spans continue it.
    const traceId = randomBytes(16).toString('hex');
    const callerSpanId = randomBytes(8).toString('hex');
    const answer = await sandbox.call<{ event_id: string }>(
      company.apiKey,
      '/send',
      { phone_number: person.phone, text: 'Traced from end to end', service: 'telegram' },
      { traceparent: `00-${traceId}-${callerSpanId}-01`, 'idempotency-key': `traced-${traceId}` },
    );
    expect(answer.status).toBe(202);
    const eventId = answer.body.event_id;
    const webhook = await company.webhooks.waitFor(eventId, WAIT_MS);
    expect(webhook.payload).toMatchObject({ type: 'message.status', event_id: eventId, state: 'sent' });
    // The endpoint is told the trace too (W3C traceparent on the POST), as any traced HTTP call does.
    expect(webhook.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    const hops = ['gateway accept', 'registry route', 'telegram-sender send', 'webhook deliver'];
    const spans = await eventually(
      'every hop of the trace exported',
      () => {
        const found = receiver.trace(traceId);
        const names = new Set(found.map((s) => s.name));
        return hops.every((h) => names.has(h)) && found.some((s) => s.service === 'messenger-simulator')
          ? found
          : undefined;
      },
      WAIT_MS,
    );
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const one = (name: string) => {
      const found = spans.filter((s) => s.name === name);
      expect(found, `spans named "${name}"`).toHaveLength(1);
      return found[0]!;
    };
    /** The span's ancestors up to the caller's span, nearest first. */
    const ancestry = (span: ReceivedSpan) => {
      const chain: ReceivedSpan[] = [];
      for (let s = byId.get(span.parentSpanId); s; s = byId.get(s.parentSpanId)) chain.push(s);
      return chain;
    };

    // The gateway: its HTTP server span continues the caller's, the accept is inside it.
    const server = spans.find((s) => s.service === 'gateway' && s.parentSpanId === callerSpanId);
    expect(server?.name).toMatch(/^POST\b/);
    expect(server?.attributes['http.response.status_code'] ?? server?.attributes['http.status_code']).toBe(
      202,
    );
    const accept = one('gateway accept');
    expect(accept.service).toBe('gateway');
    expect(ancestry(accept)).toContain(server);

    // Each hop in the next service is the child of the one before, across Kafka and the tables between.
    const route = one('registry route');
    expect(route).toMatchObject({ service: 'client-registry', parentSpanId: accept.spanId });
    expect(route.attributes['mds.message_id']).toBe(eventId);
    const send = one('telegram-sender send');
    expect(send).toMatchObject({ service: 'telegram-sender', parentSpanId: route.spanId });
    expect(send.attributes['mds.message_id']).toBe(eventId);
    const deliver = one('webhook deliver');
    expect(deliver).toMatchObject({ service: 'webhook-dispatcher', parentSpanId: send.spanId });
    expect(deliver.attributes['mds.webhook_kind']).toBe('message.status');

    // Inside the hops, what the instrumentations see: the API key's lookup over gRPC and the Idempotency-Key
    // claim in PostgreSQL, the call to the messenger (the simulator's server span under the sender's client
    // span), the endpoint's lookup over gRPC and the POST to the webhook endpoint.
    const lookup = spans.find((s) => s.service === 'client-registry' && s.name.endsWith('/ResolveApiKey'));
    expect(ancestry(lookup!)).toContain(server);
    const claim = spans.find((s) => s.service === 'gateway' && s.name.startsWith('pg.query:INSERT'));
    expect(ancestry(claim!)).toContain(server);
    const messengerCall = spans.find((s) => s.service === 'messenger-simulator');
    expect(ancestry(messengerCall!)).toContain(send);
    const webhookPost = spans.find(
      (s) => s.kind === 3 && s.name === 'POST' && s.parentSpanId === deliver.spanId,
    );
    expect(webhookPost?.parentSpanId).toBe(deliver.spanId);
    expect(webhook.headers.traceparent).toBe(`00-${traceId}-${webhookPost!.spanId}-01`);
    // Every span of the message is in this one trace, none failed; the services are named by the resource.
    expect(spans.filter((s) => s.statusCode === 2)).toEqual([]);
    expect(new Set(spans.map((s) => s.service))).toEqual(
      new Set(['gateway', 'client-registry', 'telegram-sender', 'messenger-simulator', 'webhook-dispatcher']),
    );
    expect(receiver.refused).toEqual([]);

    // Log lines written inside a span name it: the gateway's access line of the request.
    const access = readFileSync(stack.service('gateway').logFile, 'utf8')
      .split('\n')
      .filter((line) => line.includes(traceId))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((line) => line.msg === 'request');
    expect(access).toMatchObject({
      route: '/api/v1/send',
      status: 202,
      trace_id: traceId,
      span_id: server!.spanId,
    });
  });

  it("follows a client check through the registry's outbox to its client.check webhook", async () => {
    const company = await sandbox.companyWithWebhooks('traced-check');
    const traceId = randomBytes(16).toString('hex');
    const answer = await sandbox.call<{ event_id: string }>(
      company.apiKey,
      '/client/check',
      { phone_number: '79160000001' },
      { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    );
    expect(answer.status).toBe(202);
    const webhook = await company.webhooks.waitFor(answer.body.event_id, WAIT_MS);
    expect(webhook.payload).toMatchObject({ type: 'client.check', exists: false });
    expect(webhook.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-`));

    const spans = await eventually(
      "the check's hops exported",
      () => {
        const found = receiver.trace(traceId);
        return found.some((s) => s.name === 'webhook deliver') ? found : undefined;
      },
      WAIT_MS,
    );
    const accept = spans.find((s) => s.name === 'gateway accept');
    const decide = spans.find((s) => s.name === 'registry client request');
    const deliver = spans.find((s) => s.name === 'webhook deliver');
    expect(decide).toMatchObject({ service: 'client-registry', parentSpanId: accept!.spanId });
    expect(decide!.attributes['mds.request_id']).toBe(answer.body.event_id);
    // The answer went through the registry's outbox (stored with the decision, relayed after commit).
    expect(deliver).toMatchObject({ service: 'webhook-dispatcher', parentSpanId: decide!.spanId });
    expect(deliver!.attributes['mds.webhook_kind']).toBe('client.check');
  });

  it("continues the message's trace in a retry the dispatcher claims from its deliveries table", async () => {
    const company = await sandbox.companyWithWebhooks('traced-retry');
    const bot = await sandbox.bot(company.companyId, 'max', 'traced-max');
    const person = await sandbox.linkedPerson(company.companyId, bot);
    // The endpoint fails the first attempt: the delivery waits in the table until a claim takes it again.
    let answered = 0;
    company.webhooks.respond = () => (answered++ === 0 ? 503 : 200);

    const answer = await sandbox.call<{ event_id: string }>(company.apiKey, '/send', {
      phone_number: person.phone,
      text: 'Traced through a retry',
      service: 'max',
    });
    expect(answer.status).toBe(202);
    const eventId = answer.body.event_id;
    const attempts = await eventually(
      'the second attempt of the webhook',
      () => {
        const about = company.webhooks.about(eventId);
        return about.length >= 2 ? about : undefined;
      },
      WAIT_MS,
    );
    const traceIds = attempts.map((w) => /^00-([0-9a-f]{32})-/.exec(w.headers.traceparent ?? '')?.[1]);
    // A new trace began at the gateway (the caller sent none); both attempts are in it.
    expect(traceIds[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(traceIds[1]).toBe(traceIds[0]);

    const spans = await eventually(
      'both attempts exported',
      () => {
        const found = receiver.trace(traceIds[0]!);
        return found.filter((s) => s.name === 'webhook deliver').length === 2 ? found : undefined;
      },
      WAIT_MS,
    );
    const send = spans.filter((s) => s.name === 'max-sender send');
    expect(send).toHaveLength(1);
    const delivers = spans
      .filter((s) => s.name === 'webhook deliver')
      .sort((a, b) => Number(a.attributes['mds.attempt']) - Number(b.attributes['mds.attempt']));
    expect(delivers.map((d) => d.attributes['mds.attempt'])).toEqual([1, 2]);
    for (const deliver of delivers) expect(deliver.parentSpanId).toBe(send[0]!.spanId);
    expect(spans.find((s) => s.name === 'registry route')?.spanId).toBe(send[0]!.parentSpanId);
  });
});

describe('what traces carry', () => {
  it('no token, secret, phone number or text of a whole flow: send, check, change_phone, forget, a webhook with a query token, the dashboard', async () => {
    const webhooks = await new WebhookReceiver().start();
    const receiverToken = `rcv${randomBytes(12).toString('hex')}`;
    const company = await sandbox.company('traced-secrets', `${webhooks.url}?token=${receiverToken}`);
    webhooks.verifyWith(company.secrets);
    try {
      // Registering each bot checks its token with the messenger (Telegram: /bot<token>/getMe; MAX: access_token).
      const telegram = await sandbox.bot(company.companyId, 'telegram', 'traced-secrets-tg');
      const max = await sandbox.bot(company.companyId, 'max', 'traced-secrets-max');
      const person = await sandbox.linkedPerson(company.companyId, telegram);
      await sandbox.startAndShareContact(person, max);
      await sandbox.waitForLink(company.companyId, person.phone, max, true);
      const text = `Traced parcel ${randomBytes(4).toString('hex')} for Ivan`;
      const button = {
        text: `Track ${randomBytes(3).toString('hex')}`,
        url: `https://track.example/${randomBytes(6).toString('hex')}`,
      };
      const sends = await Promise.all(
        (['telegram', 'max'] as const).map((service) =>
          sandbox.send(company.apiKey, { phone_number: person.phone, text, service, buttons: [button] }),
        ),
      );
      for (const id of sends)
        expect((await webhooks.waitFor(id, WAIT_MS)).payload).toMatchObject({ state: 'sent' });
      const check = await sandbox.call<{ event_id: string }>(company.apiKey, '/client/check', {
        phone_number: person.phone,
      });
      await webhooks.waitFor(check.body.event_id, WAIT_MS);

      // The dashboard: a client's page by number, and a bot's token check.
      const password = `traced-${randomBytes(9).toString('hex')}`;
      const dashboard = await sandbox.dashboardSession(company.companyId, password);
      expect((await dashboard.call('GET', `/clients/${person.phone}`)).status).toBe(200);
      expect((await dashboard.call('POST', `/bots/${telegram.botId}/check`)).status).toBe(200);

      const newPhone = uniquePhone();
      const change = await sandbox.call<{ event_id: string }>(company.apiKey, '/change_phone', {
        old_phone: person.phone,
        new_phone: newPhone,
      });
      await webhooks.waitFor(change.body.event_id, WAIT_MS);
      await sandbox.forgetClient(company.companyId, newPhone);

      // Every span of all that exported (each service exports within 200 ms of a span's end).
      const exported = (pattern: RegExp) =>
        receiver.spans.map((s) => JSON.stringify(s)).filter((s) => pattern.test(s));
      const spans = await eventually(
        'the spans of the flow exported',
        () =>
          [/getMe/, /sendMessage/, /"client-registry".*\/forget/, /"dashboard".*\/api\/clients\//].every(
            (p) => exported(p).length > 0,
          )
            ? receiver.spans
            : undefined,
        WAIT_MS,
      );
      expect(spans.length).toBeGreaterThan(50);
      const secrets = {
        'API key': company.apiKey,
        'Telegram bot token': telegram.token,
        'MAX bot token': max.token,
        "receiver's query token": receiverToken,
        'webhook signing secret': company.secrets[0]!,
        'admin token': sandbox.adminToken,
        'phone number': person.phone,
        'new phone number': newPhone,
        'message text': text,
        'button text': button.text,
        'button URL': button.url,
        ...Object.fromEntries(dashboard.secrets.map((s, i) => [`dashboard secret ${i}`, s])),
      };
      const bodies = receiver.bodies.join('\n');
      const leaked = Object.entries(secrets)
        .filter(([, value]) => bodies.includes(value) || bodies.includes(encodeURIComponent(value)))
        .map(([what]) => what);
      expect(leaked).toEqual([]);
      // What they carry instead: templates of the URLs and routes.
      expect(exported(/"url.full":"http:\/\/127.0.0.1:\d+\/bot\*\*\*\/getMe"/)).not.toEqual([]);
      expect(exported(/"url.full":"http:\/\/127.0.0.1:\d+\/bot\*\*\*\/sendMessage"/)).not.toEqual([]);
      expect(exported(/"url.full":"http:\/\/127.0.0.1:\d+\/webhooks\?\[redacted\]"/)).not.toEqual([]);
      expect(exported(/"client-registry".*"url.path":"[^"]*\/clients\/\{phone\}\/forget"/)).not.toEqual([]);
      expect(exported(/"dashboard".*"url.path":"\/api\/clients\/\{phone\}"/)).not.toEqual([]);
    } finally {
      await webhooks.close();
    }
  }, 240_000);
});
