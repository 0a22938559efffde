// The webhook endpoints page's API (issue 36) against real Kafka, PostgreSQL, client-registry and the
// webhook-dispatcher (their endpoints API and test events): managed by owners and developers, read by viewers, each
// change in the audit trail, health and the attempts list from the dashboard's own read model.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EndpointList, EndpointWithHealth } from './domain/views.js';
import {
  bot,
  companyWithOwner,
  eventually,
  member,
  messageStory,
  publishStory,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

let stack: DashboardStack;
let receiver: Server;
let receiverUrl = '';
const received: { headers: Record<string, string>; body: string }[] = [];

beforeAll(async () => {
  stack = await startDashboardStack({ dispatcher: 'registry-topics' });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({
        headers: req.headers as Record<string, string>,
        body: Buffer.concat(chunks).toString(),
      });
      res.writeHead(200).end('got it');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise((r) => receiver?.close(r));
  await stack?.stop();
});

interface Added {
  endpoint: EndpointWithHealth;
  secret: string;
}

async function auditOf(companyId: string): Promise<{ action: string; target: string; detail: unknown }[]> {
  const client = new pg.Client({ connectionString: stack.databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query(
      'select action, target, detail from dashboard.audit_log where company_id = $1 order by id',
      [companyId],
    );
    return rows as { action: string; target: string; detail: unknown }[];
  } finally {
    await client.end();
  }
}

describe('webhook endpoints', () => {
  it('are added with their event types, changed, tested, their secrets revealed and rotated, turned off and on, and removed, each change audited', async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Endpoints');
    const added = await owner.call<Added>('POST', '/webhook/endpoints', {
      url: `${receiverUrl}/orders?token=abc`,
      description: 'Orders service',
      event_types: ['message.status', 'client.check'],
      rate_limit_per_second: 20,
    });
    expect(added.status).toBe(201);
    expect(added.body.secret).toMatch(/^whsec_/);
    const id = added.body.endpoint.id;
    expect(id).toMatch(/^ep_[0-9A-Za-z]{22}$/);

    const listed = await owner.call<EndpointList>('GET', '/webhook/endpoints');
    expect(listed.body.event_types).toEqual(['message.status', 'client.check', 'client.phone_changed']);
    expect(listed.body.limits).toEqual({
      endpoints: 10,
      description_length: 200,
      rate_limit_per_second: 1000,
    });
    expect(listed.body.endpoints).toEqual([
      expect.objectContaining({
        id,
        url: `${receiverUrl}/orders?token=abc`,
        description: 'Orders service',
        event_types: ['message.status', 'client.check'],
        enabled: true,
        rate_limit_per_second: 20,
        health: { attempts_24h: 0, succeeded_24h: 0, success_rate_24h: null, last_failure: null },
      }),
    ]);

    const changed = await owner.call<{ endpoint: EndpointWithHealth }>('PATCH', `/webhook/endpoints/${id}`, {
      event_types: [],
      rate_limit_per_second: null,
    });
    expect(changed.body.endpoint).toMatchObject({ event_types: [], rate_limit_per_second: null });

    // A test event to this endpoint, signed with its own secret, and what it answered.
    const test = await owner.call<{
      request: { headers: Record<string, string> };
      response: { outcome: string; status_code: number; excerpt: string };
    }>('POST', `/webhook/endpoints/${id}/test`);
    expect(test.body.response).toMatchObject({ outcome: 'succeeded', status_code: 200, excerpt: 'got it' });
    const arrived = received.find(
      (r) => r.headers['webhook-id'] === test.body.request.headers['webhook-id'],
    )!;
    expect(new Webhook(added.body.secret).verify(arrived.body, arrived.headers)).toMatchObject({
      type: 'webhook.test',
    });

    const secrets = await owner.call<{ secrets: { secret: string }[] }>(
      'POST',
      `/webhook/endpoints/${id}/secrets`,
    );
    expect(secrets.body.secrets.map((s) => s.secret)).toEqual([added.body.secret]);
    const rotated = await owner.call<{ secret: string; endpoint: EndpointWithHealth }>(
      'POST',
      `/webhook/endpoints/${id}/rotate`,
    );
    expect(rotated.body.secret).not.toBe(added.body.secret);
    expect(rotated.body.endpoint.secrets.map((s) => s.current)).toEqual([true, false]);

    const off = await owner.call<{ endpoint: EndpointWithHealth }>(
      'POST',
      `/webhook/endpoints/${id}/disable`,
      {
        reason: 'maintenance',
      },
    );
    expect(off.body.endpoint).toMatchObject({ enabled: false, disabled_reason: 'maintenance' });
    const on = await owner.call<{ endpoint: EndpointWithHealth }>('POST', `/webhook/endpoints/${id}/enable`);
    expect(on.body.endpoint).toMatchObject({ enabled: true, disabled_reason: null });
    expect((await owner.call('DELETE', `/webhook/endpoints/${id}`)).status).toBe(204);
    expect((await owner.call<{ endpoints: unknown[] }>('GET', '/webhook/endpoints')).body.endpoints).toEqual(
      [],
    );

    const audit = await auditOf(companyId);
    expect(audit.filter((a) => a.action.startsWith('webhook.')).map((a) => [a.action, a.target])).toEqual([
      ['webhook.endpoint_added', id],
      ['webhook.endpoint_changed', id],
      ['webhook.endpoint_tested', id],
      ['webhook.endpoint_secrets_revealed', id],
      ['webhook.endpoint_secret_rotated', id],
      ['webhook.endpoint_disabled', id],
      ['webhook.endpoint_enabled', id],
      ['webhook.endpoint_removed', id],
    ]);
    // The receiver's token in the URL's query stays out of the audit trail.
    expect(JSON.stringify(audit[0]?.detail ?? audit)).not.toContain('abc');
  });

  it('refuses bad settings and unknown endpoints with stable codes', async () => {
    const { owner } = await companyWithOwner(stack, 'Refusals');
    const add = (body: unknown) => owner.call<{ code: string }>('POST', '/webhook/endpoints', body);
    for (const body of [
      { url: 'ftp://example.com/hooks' },
      { url: 'https://example.com/hooks', event_types: ['message.sent'] },
      { url: 'https://example.com/hooks', event_types: ['client.check', 'client.check'] },
      { url: 'https://example.com/hooks', rate_limit_per_second: 1001 },
      { url: 'https://example.com/hooks', description: 'x'.repeat(201) },
      { url: 'https://example.com/hooks', secret: 'whsec_mine' },
    ]) {
      const refused = await add(body);
      expect([JSON.stringify(body), refused.status, refused.body.code]).toEqual([
        JSON.stringify(body),
        422,
        'validation_failed',
      ]);
    }
    expect(
      (
        await owner.call<{ code: string }>('PATCH', '/webhook/endpoints/ep_nope', {
          url: 'https://a.example',
        })
      ).body.code,
    ).toBe('webhook_endpoint_not_found');
    // Well-formed but not the company's: the registry's answer, with its code.
    const unknown = await owner.call<{ code: string }>(
      'POST',
      '/webhook/endpoints/ep_0123456789abcdefABCDEF/test',
    );
    expect([unknown.status, unknown.body.code]).toEqual([404, 'webhook_endpoint_not_found']);
    expect((await owner.call('PATCH', '/webhook/endpoints/ep_default', {})).status).toBe(422);
    for (let i = 0; i < 10; i++) expect((await add({ url: `https://example.com/${i}` })).status).toBe(201);
    const eleventh = await add({ url: 'https://example.com/11' });
    expect([eleventh.status, eleventh.body.code]).toEqual([409, 'webhook_endpoint_limit']);
  });

  it('are read by viewers with their URLs redacted, managed by developers only', async () => {
    const { owner } = await companyWithOwner(stack, 'Roles');
    const { browser: developer } = await member(stack, owner, 'developer');
    const { browser: viewer } = await member(stack, owner, 'viewer');
    const added = await developer.call<Added>('POST', '/webhook/endpoints', {
      url: 'https://hooks.example/mds?token=s3cret',
    });
    expect(added.status).toBe(201);
    const seen = await viewer.call<{ endpoints: EndpointWithHealth[] }>('GET', '/webhook/endpoints');
    expect(seen.body.endpoints[0]?.url).not.toContain('s3cret');
    const id = added.body.endpoint.id;
    for (const [method, path] of [
      ['POST', '/webhook/endpoints'],
      ['PATCH', `/webhook/endpoints/${id}`],
      ['DELETE', `/webhook/endpoints/${id}`],
      ['POST', `/webhook/endpoints/${id}/secrets`],
      ['POST', `/webhook/endpoints/${id}/rotate`],
      ['POST', `/webhook/endpoints/${id}/disable`],
      ['POST', `/webhook/endpoints/${id}/test`],
    ] as const) {
      expect([method, path, (await viewer.call(method, path, { url: 'https://x.example' })).status]).toEqual([
        method,
        path,
        403,
      ]);
    }
  });

  it("show each endpoint's health and attempts from the log, the automatic disabling with its last failure", async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Health');
    const { botId } = await bot(stack, companyId);
    const add = async (url: string) =>
      (await owner.call<Added>('POST', '/webhook/endpoints', { url })).body.endpoint.id;
    const good = await add('https://good.example/hooks');
    const bad = await add('https://bad.example/hooks');
    const stories = [
      messageStory({ companyId, botId, endpointId: good, webhook: ['succeeded'] }),
      messageStory({ companyId, botId, endpointId: good, webhook: ['retryable', 'succeeded'] }),
      messageStory({ companyId, botId, endpointId: bad, webhook: ['retryable', 'retryable'] }),
    ];
    for (const story of stories) await publishStory(stack.publisher, story);
    await stack.disableAutomatically(companyId, bad, 'failing for 5 days');
    const endpoints = await eventually('health from the log', async () => {
      const { body } = await owner.call<{ endpoints: EndpointWithHealth[] }>('GET', '/webhook/endpoints');
      const total = body.endpoints.reduce((n, e) => n + e.health.attempts_24h, 0);
      return total === 5 ? body.endpoints : undefined;
    });
    const health = Object.fromEntries(endpoints.map((e) => [e.id, e]));
    expect(health[good]?.health).toMatchObject({ attempts_24h: 3, succeeded_24h: 2 });
    expect(health[good]?.health.success_rate_24h).toBeCloseTo(2 / 3);
    expect(health[bad]).toMatchObject({
      enabled: false,
      disabled_automatically: true,
      disabled_reason: 'failing for 5 days',
      health: {
        attempts_24h: 2,
        succeeded_24h: 0,
        success_rate_24h: 0,
        last_failure: { outcome: 'retryable', status_code: 503, error: 'HTTP 503' },
      },
    });

    const attempts = (endpoint: string, status: string) =>
      owner.call<{ deliveries: { webhook_id: string; endpoint_id: string }[] }>(
        'GET',
        `/deliveries?status=${status}&endpoint_id=${endpoint}`,
      );
    expect((await attempts(bad, 'pending')).body.deliveries.map((d) => d.webhook_id)).toEqual([
      stories[2]!.webhookId,
    ]);
    expect((await attempts(good, 'delivered')).body.deliveries.map((d) => d.endpoint_id)).toEqual([
      good,
      good,
    ]);
    expect((await attempts(good, 'pending')).body.deliveries).toEqual([]);
    expect((await attempts('not-an-endpoint', 'pending')).status).toBe(422);
  });
});
