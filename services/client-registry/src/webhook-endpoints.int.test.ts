import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_WEBHOOK_ENDPOINTS, registryV1, topics, type AccountEvent } from '@mds/contracts';
import { openDatabase } from '@mds/db';
import { clientChannelOptions, grpc, isGrpcError, unary } from '@mds/grpc';
import { uniqueName } from '@mds/local-infra/testing';
import { SCHEMA } from './adapters/db/migrations.js';
import { loadAccount } from './adapters/db/accounts-store.js';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  admin,
  collect,
  createCompany,
  eventually,
  rebuildFromLog,
  startRegistryStack,
  type RegistryStack,
  outboxDrained,
} from '../test/support.js';
import { mdsAdmin } from '../test/mds-admin.js';

// A company's webhook endpoints through the admin API, the gRPC the dispatcher asks, and mds-admin, against the
// real broker and database.

interface EndpointView {
  id: string;
  url: string;
  description: string;
  event_types: string[];
  enabled: boolean;
  disabled_reason: string | null;
  disabled_automatically: boolean;
  rate_limit_per_second: number | null;
  secrets: { secret_id: string; current: boolean; expires_at: string | null }[];
}
type Problem = { code: string; errors?: { pointer: string; code?: string }[] };

let stack: RegistryStack;
let client: registryV1.RegistryServiceClient;
let accounts: Awaited<ReturnType<typeof collect<AccountEvent>>>;

beforeAll(async () => {
  stack = await startRegistryStack();
  client = new registryV1.RegistryServiceClient(
    stack.grpc,
    grpc.credentials.createInsecure(),
    clientChannelOptions('mds.registry.v1.RegistryService', { token: INTERNAL_TOKEN }),
  );
  accounts = await collect(stack, topics.account);
}, 120_000);

afterAll(async () => {
  client?.close();
  await accounts?.stop();
  await stack?.stop();
});

const endpoints = (companyId: string) => `/companies/${companyId}/webhook/endpoints`;
async function addEndpoint(companyId: string, body: Record<string, unknown>) {
  const added = await admin<{ endpoint: EndpointView; secret: string }>(
    stack,
    'POST',
    endpoints(companyId),
    body,
  );
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  return added.body;
}

describe('webhook endpoints through the admin API', () => {
  it('are added with their settings and a secret each, listed, shown, changed and removed', async () => {
    const companyId = await createCompany(stack);
    const production = await addEndpoint(companyId, {
      url: 'https://prod.example/hooks',
      description: 'production',
      event_types: ['message.status', 'client.check'],
      rate_limit_per_second: 50,
    });
    expect(production.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    expect(production.endpoint).toEqual({
      id: expect.stringMatching(/^ep_[0-9A-Za-z]{22}$/),
      url: 'https://prod.example/hooks',
      description: 'production',
      event_types: ['message.status', 'client.check'],
      enabled: true,
      disabled_reason: null,
      disabled_automatically: false,
      rate_limit_per_second: 50,
      secrets: [{ secret_id: expect.any(String), current: true, expires_at: null }],
    });
    const staging = await addEndpoint(companyId, { url: 'https://staging.example/hooks', enabled: false });
    expect(staging.endpoint).toMatchObject({
      event_types: [],
      enabled: false,
      disabled_reason: 'added disabled',
      rate_limit_per_second: null,
    });
    // The single-URL API adds ep_default, which is listed first.
    expect(
      (await admin(stack, 'PUT', `/companies/${companyId}/webhook`, { url: 'https://legacy.example/hook' }))
        .status,
    ).toBe(200);
    const listed = await admin<{ endpoints: EndpointView[] }>(stack, 'GET', endpoints(companyId));
    expect(listed.body.endpoints.map((e) => e.id)).toEqual([
      'ep_default',
      production.endpoint.id,
      staging.endpoint.id,
    ]);

    const path = `${endpoints(companyId)}/${production.endpoint.id}`;
    expect((await admin<EndpointView>(stack, 'GET', path)).body).toEqual(production.endpoint);
    const changed = await admin<EndpointView>(stack, 'PATCH', path, {
      url: 'https://prod2.example/hooks',
      event_types: ['client.phone_changed'],
      rate_limit_per_second: null,
    });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({
      url: 'https://prod2.example/hooks',
      description: 'production',
      event_types: ['client.phone_changed'],
      rate_limit_per_second: null,
      secrets: production.endpoint.secrets,
    });

    // Secrets are the endpoint's own: rotating one leaves the others'.
    const before = await admin<{ secrets: { secret: string }[] }>(stack, 'GET', `${path}/secrets`);
    expect(before.body.secrets.map((s) => s.secret)).toEqual([production.secret]);
    const rotated = await admin<{ secret: string; endpoint: EndpointView }>(
      stack,
      'POST',
      `${path}/rotate-secret`,
    );
    expect(rotated.status).toBe(200);
    expect(rotated.body.endpoint.secrets.map((s) => s.current)).toEqual([true, false]);
    const after = await admin<{ secrets: { secret: string; expires_at: string | null }[] }>(
      stack,
      'GET',
      `${path}/secrets`,
    );
    expect(after.body.secrets.map((s) => s.secret)).toEqual([rotated.body.secret, production.secret]);
    expect(Date.parse(after.body.secrets[1]!.expires_at!)).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    const stagingSecrets = await admin<{ secrets: { secret: string }[] }>(
      stack,
      'GET',
      `${endpoints(companyId)}/${staging.endpoint.id}/secrets`,
    );
    expect(stagingSecrets.body.secrets.map((s) => s.secret)).toEqual([staging.secret]);

    // Disable one, enable another: each on its own.
    const disabled = await admin<EndpointView>(stack, 'POST', `${path}/disable`, { reason: 'maintenance' });
    expect(disabled.body).toMatchObject({
      enabled: false,
      disabled_reason: 'maintenance',
      disabled_automatically: false,
    });
    const enabled = await admin<EndpointView>(
      stack,
      'POST',
      `${endpoints(companyId)}/${staging.endpoint.id}/enable`,
    );
    expect(enabled.body).toMatchObject({ enabled: true, disabled_reason: null });

    // The company view keeps `webhook` (ep_default's) and lists every endpoint.
    const company = await admin<{ webhook: { url: string }; webhook_endpoints: EndpointView[] }>(
      stack,
      'GET',
      `/companies/${companyId}`,
    );
    expect(company.body.webhook).toMatchObject({ url: 'https://legacy.example/hook', enabled: true });
    expect(company.body.webhook_endpoints.map((e) => [e.id, e.enabled])).toEqual([
      ['ep_default', true],
      [production.endpoint.id, false],
      [staging.endpoint.id, true],
    ]);

    expect((await admin(stack, 'DELETE', path)).status).toBe(204);
    const gone = await admin<Problem>(stack, 'GET', path);
    expect([gone.status, gone.body.code]).toEqual([404, 'webhook_endpoint_not_found']);
    expect((await admin<Problem>(stack, 'DELETE', path)).body.code).toBe('webhook_endpoint_not_found');

    // Every change is an event of the account naming its endpoint.
    const kinds = await eventually('the endpoint events', () => {
      const mine = accounts.events.filter((e) => e.metadata.streamId === companyId).map((e) => e.event);
      return mine.some((e) => e.$case === 'webhookEndpointRemoved') && mine;
    });
    const about = (id: string) =>
      kinds
        .filter((e) => e.$case !== 'companyCreated')
        .filter((e) => (e.value as { endpointId: string }).endpointId === id)
        .map((e) => e.$case);
    expect(about(production.endpoint.id)).toEqual([
      'webhookEndpointConfigured',
      'webhookEndpointConfigured',
      'webhookSecretRotated',
      'webhookEndpointDisabled',
      'webhookEndpointRemoved',
    ]);
    expect(about('ep_default')).toEqual(['webhookEndpointConfigured']);
  }, 60_000);

  it(`answers bad input with problems: ${MAX_WEBHOOK_ENDPOINTS} at most, unknown types, bad URLs, unknown ids`, async () => {
    const companyId = await createCompany(stack);
    const refused = async (method: string, path: string, body: unknown) =>
      admin<Problem>(stack, method, path, body).then((r) => ({ status: r.status, ...r.body }));

    const unknownType = await refused('POST', endpoints(companyId), {
      url: 'https://a.example/h',
      event_types: ['message.status', 'message.sent'],
    });
    expect(unknownType).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(unknownType.errors?.map((e) => e.pointer)).toEqual(['#/event_types/1']);
    const password = await refused('POST', endpoints(companyId), { url: 'https://u:p@a.example/h' });
    expect(password).toMatchObject({ status: 422, code: 'validation_failed' });
    expect(password.errors).toEqual([
      expect.objectContaining({ pointer: '#/url', code: 'userinfo_not_allowed' }),
    ]);
    for (const body of [
      { url: 'ftp://a.example/h' },
      { url: 'https://a.example/h', description: 'x'.repeat(201) },
      { url: 'https://a.example/h', rate_limit_per_second: 0 },
      { url: 'https://a.example/h', rate_limit_per_second: 1001 },
      { url: 'https://a.example/h', secret: 'whsec_mine' },
      {},
    ])
      expect(await refused('POST', endpoints(companyId), body), JSON.stringify(body)).toMatchObject({
        status: 422,
        code: 'validation_failed',
      });

    const ids: string[] = [];
    for (let i = 0; i < MAX_WEBHOOK_ENDPOINTS; i++)
      ids.push((await addEndpoint(companyId, { url: `https://e${i}.example/h` })).endpoint.id);
    expect(await refused('POST', endpoints(companyId), { url: 'https://one-more.example/h' })).toMatchObject({
      status: 409,
      code: 'webhook_endpoint_limit',
    });
    expect(
      await refused('PUT', `/companies/${companyId}/webhook`, { url: 'https://legacy.example/h' }),
    ).toMatchObject({ status: 409, code: 'webhook_endpoint_limit' });
    expect(
      await refused('PATCH', `${endpoints(companyId)}/${ids[0]}`, { event_types: ['nope'] }),
    ).toMatchObject({
      status: 422,
      code: 'validation_failed',
    });

    for (const id of ['ep_AAAAAAAAAAAAAAAAAAAAAA', 'not-an-id', 'ep_default'])
      for (const [method, rest] of [
        ['GET', ''],
        ['PATCH', ''],
        ['DELETE', ''],
        ['GET', '/secrets'],
        ['POST', '/rotate-secret'],
        ['POST', '/enable'],
        ['POST', '/disable'],
      ] as const)
        expect(
          await refused(method, `${endpoints(companyId)}/${id}${rest}`, method === 'PATCH' ? {} : undefined),
        ).toMatchObject({
          status: 404,
          code: 'webhook_endpoint_not_found',
        });
    // The single-URL API without ep_default: as before endpoints.
    expect(await refused('GET', `/companies/${companyId}/webhook/secrets`, undefined)).toMatchObject({
      status: 404,
      code: 'webhook_not_configured',
    });
    expect(await refused('POST', `/companies/${companyId}/webhook/disable`, undefined)).toMatchObject({
      status: 409,
      code: 'webhook_not_configured',
    });
    expect(await refused('GET', endpoints(randomUUID()), undefined)).toMatchObject({
      status: 404,
      code: 'company_not_found',
    });
  }, 60_000);
});

describe('webhook endpoints over gRPC (for webhook-dispatcher)', () => {
  it('lists every endpoint with its secrets opened; gets and disables one by id; no id means ep_default', async () => {
    const companyId = await createCompany(stack);
    const only = await addEndpoint(companyId, {
      url: 'https://only.example/h',
      event_types: ['client.check'],
    });
    // No ep_default, one endpoint: the single-URL question gets that one.
    expect(await unary(client, 'getWebhookEndpoint', { companyId, endpointId: '' })).toMatchObject({
      url: 'https://only.example/h',
    });
    const second = await addEndpoint(companyId, {
      url: 'https://second.example/h',
      rate_limit_per_second: 7,
    });
    const none: unknown = await unary(client, 'getWebhookEndpoint', { companyId, endpointId: '' }).catch(
      (e: unknown) => e,
    );
    expect(isGrpcError(none, grpc.status.NOT_FOUND)).toBe(true);
    const rotated = await admin<{ secret: string }>(
      stack,
      'POST',
      `${endpoints(companyId)}/${second.endpoint.id}/rotate-secret`,
    );

    const listed = await unary(client, 'listWebhookEndpoints', { companyId });
    expect(listed.endpoints.map((e) => ({ ...e, secrets: e.secrets.map((s) => s.secret) }))).toEqual([
      {
        endpointId: only.endpoint.id,
        url: 'https://only.example/h',
        description: '',
        eventTypes: ['client.check'],
        enabled: true,
        disabledReason: '',
        rateLimitPerSecond: 0,
        secrets: [only.secret],
      },
      {
        endpointId: second.endpoint.id,
        url: 'https://second.example/h',
        description: '',
        eventTypes: [],
        enabled: true,
        disabledReason: '',
        rateLimitPerSecond: 7,
        secrets: [rotated.body.secret, second.secret],
      },
    ]);
    expect(listed.endpoints[1]!.secrets[0]!.expiresAt).toBeUndefined();
    expect(listed.endpoints[1]!.secrets[1]!.expiresAt!.getTime()).toBeGreaterThan(Date.now());
    expect(
      (await unary(client, 'getWebhookEndpoint', { companyId, endpointId: second.endpoint.id })).secrets.map(
        (s) => s.secret,
      ),
    ).toEqual([rotated.body.secret, second.secret]);

    // The dispatcher turns one off: automatically, the other carries on.
    await expect(
      unary(client, 'disableWebhookEndpoint', {
        companyId,
        endpointId: only.endpoint.id,
        reason: 'HTTP 500 for 5 days',
      }),
    ).resolves.toEqual({ disabled: true });
    await expect(
      unary(client, 'disableWebhookEndpoint', { companyId, endpointId: only.endpoint.id, reason: 'again' }),
    ).resolves.toEqual({ disabled: false });
    const view = await admin<EndpointView>(stack, 'GET', `${endpoints(companyId)}/${only.endpoint.id}`);
    expect(view.body).toMatchObject({
      enabled: false,
      disabled_reason: 'HTTP 500 for 5 days',
      disabled_automatically: true,
    });
    expect(
      (await unary(client, 'listWebhookEndpoints', { companyId })).endpoints.map((e) => e.enabled),
    ).toEqual([false, true]);
    const event = await eventually('the automatic WebhookEndpointDisabled', () =>
      accounts.events.find(
        (e) => e.metadata.streamId === companyId && e.event.$case === 'webhookEndpointDisabled',
      ),
    );
    expect(event.event.value).toEqual({
      endpointId: only.endpoint.id,
      reason: 'HTTP 500 for 5 days',
      automatic: true,
    });

    // No id: ep_default, which this company has not; an unknown id, an unknown company: NOT_FOUND.
    for (const request of [
      { companyId, endpointId: '', reason: 'x' },
      { companyId, endpointId: 'ep_AAAAAAAAAAAAAAAAAAAAAA', reason: 'x' },
      { companyId: randomUUID(), endpointId: '', reason: 'x' },
    ]) {
      const error: unknown = await unary(client, 'disableWebhookEndpoint', request).catch((e: unknown) => e);
      expect(isGrpcError(error, grpc.status.NOT_FOUND), JSON.stringify(request)).toBe(true);
    }
    await expect(unary(client, 'listWebhookEndpoints', { companyId: randomUUID() })).resolves.toEqual({
      endpoints: [],
    });
  }, 60_000);
});

describe('webhook endpoints in the log', () => {
  it('rebuild into the same documents', async () => {
    const companyId = await createCompany(stack, 'Rebuilt');
    await admin(stack, 'PUT', `/companies/${companyId}/webhook`, { url: 'https://legacy.example/h' });
    const a = await addEndpoint(companyId, {
      url: 'https://a.example/h',
      description: 'a',
      event_types: ['client.check'],
    });
    const b = await addEndpoint(companyId, { url: 'https://b.example/h', rate_limit_per_second: 3 });
    await admin(stack, 'POST', `${endpoints(companyId)}/${a.endpoint.id}/rotate-secret`);
    await admin(stack, 'POST', `${endpoints(companyId)}/ep_default/disable`, { reason: 'paused' });
    await unary(client, 'disableWebhookEndpoint', {
      companyId,
      endpointId: b.endpoint.id,
      reason: 'HTTP 410 Gone',
    });
    await admin(stack, 'DELETE', `${endpoints(companyId)}/${a.endpoint.id}`);
    await addEndpoint(companyId, { url: 'https://c.example/h' });

    const live = await openDatabase({ url: stack.databaseUrl, schema: SCHEMA });
    const schema = uniqueName('registry_endpoints');
    try {
      await outboxDrained(live);
      await rebuildFromLog(stack, schema);
      const document = (db: typeof live, s: string) =>
        db.withSchema(s).from('accounts').where({ company_id: companyId }).first<{ state: unknown }>('state');
      expect(await document(live, schema)).toEqual(await document(live, SCHEMA));
      const account = (await loadAccount(live, companyId))!;
      expect(account.webhookEndpoints.map((e) => [e.endpointId, e.enabled])).toEqual([
        ['ep_default', false],
        [b.endpoint.id, false],
        [expect.stringMatching(/^ep_/), true],
      ]);
    } finally {
      await live.destroy();
    }
  }, 60_000);
});

describe('mds-admin webhook endpoints, run through its bin', () => {
  const env = () => ({ REGISTRY_URL: stack.url, REGISTRY_ADMIN_TOKEN: ADMIN_TOKEN });
  const run = async (args: string[]) => {
    const result = await mdsAdmin(args, { env: env() });
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    return result.stdout;
  };

  it('adds, lists, shows, updates, rotates, disables, enables and removes an endpoint', async () => {
    const companyId = await createCompany(stack, 'Cli Endpoints');
    const added = JSON.parse(
      await run([
        'webhook',
        'endpoints',
        'add',
        companyId,
        '--url',
        'https://cli.example/h',
        '--description',
        'from the CLI',
        '--event-types',
        'message.status,client.check',
        '--rate-limit',
        '20',
        '--json',
      ]),
    ) as { endpoint: EndpointView; secret: string };
    expect(added.endpoint).toMatchObject({
      url: 'https://cli.example/h',
      description: 'from the CLI',
      event_types: ['message.status', 'client.check'],
      rate_limit_per_second: 20,
    });
    const id = added.endpoint.id;
    const human = await run(['webhook', 'endpoints', 'list', companyId]);
    expect(human).toContain(id);
    expect(human).toContain('https://cli.example/h');
    expect(await run(['webhook', 'endpoints', 'show', companyId, id])).toMatch(
      /url\s+https:\/\/cli\.example\/h/,
    );
    const updated = JSON.parse(
      await run([
        'webhook',
        'endpoints',
        'update',
        companyId,
        id,
        '--event-types',
        'all',
        '--no-rate-limit',
        '--json',
      ]),
    ) as EndpointView;
    expect(updated).toMatchObject({
      event_types: [],
      rate_limit_per_second: null,
      url: 'https://cli.example/h',
    });
    const rotated = JSON.parse(
      await run(['webhook', 'endpoints', 'rotate-secret', companyId, id, '--json']),
    ) as { secret: string };
    const secrets = JSON.parse(await run(['webhook', 'endpoints', 'secrets', companyId, id, '--json'])) as {
      secrets: { secret: string }[];
    };
    expect(secrets.secrets.map((s) => s.secret)).toEqual([rotated.secret, added.secret]);
    expect(
      JSON.parse(
        await run(['webhook', 'endpoints', 'disable', companyId, id, '--reason', 'by hand', '--json']),
      ),
    ).toMatchObject({ enabled: false, disabled_reason: 'by hand' });
    expect(JSON.parse(await run(['webhook', 'endpoints', 'enable', companyId, id, '--json']))).toMatchObject({
      enabled: true,
    });
    expect(await run(['webhook', 'endpoints', 'remove', companyId, id])).toContain(`removed ${id}`);

    const refused = await mdsAdmin(
      [
        'webhook',
        'endpoints',
        'add',
        companyId,
        '--url',
        'https://x.example/h',
        '--event-types',
        'message.sent',
      ],
      { env: env() },
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/422 Validation failed.*\n {2}#\/event_types\/0: /);
    const missing = await mdsAdmin(['webhook', 'endpoints', 'show', companyId, id], { env: env() });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('404');
  }, 120_000);
});
