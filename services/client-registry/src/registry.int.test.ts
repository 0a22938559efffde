import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  derivedEventId,
  isCleanText,
  Messenger,
  newEvent,
  registryV1,
  topics,
  type AccountEvent,
  type ClientEvent,
  type ClientRequestEvent,
  type DeliveryEvent,
  type DeliveryRequested,
  type DeliveryUnroutable,
  type MessageEvent,
  deliveryTopic,
} from '@mds/contracts';
import { openDatabase, type Knex } from '@mds/db';
import { clientChannelOptions, grpc, isGrpcError, unary } from '@mds/grpc';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { openRecords, registryPersonKeys, sealRecords } from '@mds/personal-data';
import { STATE_TABLES } from './rebuild.js';
import { SCHEMA } from './adapters/db/migrations.js';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  admin,
  rebuildFromLog,
  botUpdate,
  chatOf,
  collect,
  createCompany,
  eventually,
  messageAccepted,
  publishBotUpdates,
  publishMessage,
  registerBot,
  request,
  sendMessage,
  startRegistryStack,
  type RegistryStack,
  outboxDrained,
} from '../test/support.js';
import { mdsAdmin } from '../test/mds-admin.js';

let stack: RegistryStack;
let client: registryV1.RegistryServiceClient;
let accounts: Awaited<ReturnType<typeof collect<AccountEvent>>>;
let clientEvents: Awaited<ReturnType<typeof collect<ClientEvent>>>;
let outcomes: Awaited<ReturnType<typeof collect<ClientRequestEvent>>>;
let messages: Awaited<ReturnType<typeof collect<MessageEvent>>>;
let deliveries: Awaited<ReturnType<typeof collect<DeliveryEvent>>>;
let maxDeliveries: Awaited<ReturnType<typeof collect<DeliveryEvent>>>;

/** The work order routing gave a message (telegram). */
const workOrder = async (messageId: string) => {
  const order = await eventually('DeliveryRequested', () =>
    deliveries.events.find(
      (e) => e.event.$case === 'deliveryRequested' && e.event.value.messageId === messageId,
    ),
  );
  return { ...order, value: (order.event as { value: DeliveryRequested }).value };
};

/** Why routing found no route for a message: its DeliveryUnroutable, to the sender of its messenger. */
const unroutable = async (messageId: string) => {
  const order = await eventually('DeliveryUnroutable', () =>
    [...deliveries.events, ...maxDeliveries.events].find(
      (e) => e.event.$case === 'deliveryUnroutable' && e.event.value.messageId === messageId,
    ),
  );
  return (order.event as { value: DeliveryUnroutable }).value;
};

/** An event of a message (`messageId`) as the gateway or a sender writes it. */
const messageEvent = (companyId: string, messageId: string, event: NonNullable<MessageEvent['event']>) =>
  newEvent<MessageEvent>({
    eventId: randomUUID(),
    occurredAt: new Date(),
    companyId,
    streamId: messageId,
    producer: 'registry-test',
    event,
  });

beforeAll(async () => {
  stack = await startRegistryStack();
  client = new registryV1.RegistryServiceClient(
    stack.grpc,
    grpc.credentials.createInsecure(),
    clientChannelOptions('mds.registry.v1.RegistryService', { token: INTERNAL_TOKEN }),
  );
  [accounts, clientEvents, outcomes, messages, deliveries, maxDeliveries] = await Promise.all([
    collect(stack, topics.account),
    collect(stack, topics.client),
    collect(stack, topics.clientRequest),
    collect(stack, topics.message),
    collect(stack, deliveryTopic('telegram')),
    collect(stack, deliveryTopic('max')),
  ]);
});

afterAll(async () => {
  client?.close();
  await Promise.all(
    [accounts, clientEvents, outcomes, messages, deliveries, maxDeliveries].map((c) => c?.stop()),
  );
  await stack?.stop();
});

describe('the admin API', () => {
  it('needs the admin token', async () => {
    expect((await admin(stack, 'GET', '/companies', undefined, 'wrong-token-000000')).status).toBe(401);
    const bare = await fetch(`${stack.url}/admin/v1/companies`);
    expect(bare.status).toBe(401);
    expect(bare.headers.get('content-type')).toMatch(/problem\+json/);
  });

  it('creates and lists companies, and answers bad input with problems', async () => {
    const created = await admin<{ company_id: string; name: string }>(stack, 'POST', '/companies', {
      name: ' Acme ',
    });
    expect(created.status).toBe(201);
    expect(created.body.name).toBe('Acme');
    const list = await admin<{ companies: { company_id: string }[] }>(stack, 'GET', '/companies');
    expect(list.body.companies.map((c) => c.company_id)).toContain(created.body.company_id);
    const bad = await admin<{ code: string; errors: { pointer: string }[] }>(stack, 'POST', '/companies', {
      name: '',
      extra: 1,
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e) => e.pointer).sort()).toEqual(['#/extra', '#/name']);
    expect((await admin(stack, 'GET', `/companies/${randomUUID()}`)).status).toBe(404);
    expect((await admin(stack, 'GET', '/companies/not-a-uuid')).status).toBe(404);
    const event = await eventually('CompanyCreated', () =>
      accounts.events.find((e) => e.metadata.streamId === created.body.company_id),
    );
    expect(event.event).toEqual({ $case: 'companyCreated', value: { name: 'Acme' } });
  });
});

describe('the gRPC service', () => {
  it('refuses calls without the service token, and with a wrong one', async () => {
    for (const options of [{}, { token: 'wrong-token-wrong-token' }]) {
      const stranger = new registryV1.RegistryServiceClient(
        stack.grpc,
        grpc.credentials.createInsecure(),
        clientChannelOptions('mds.registry.v1.RegistryService', options),
      );
      try {
        const error: unknown = await unary(stranger, 'listBots', { messenger: 0 }).catch((e: unknown) => e);
        expect(isGrpcError(error, grpc.status.UNAUTHENTICATED)).toBe(true);
      } finally {
        stranger.close();
      }
    }
  });
});

describe('the mds-admin CLI, run through its bin', () => {
  const env = () => ({ REGISTRY_URL: stack.url, REGISTRY_ADMIN_TOKEN: ADMIN_TOKEN });

  it('prints text for a person and JSON with --json, and says what the registry refused', async () => {
    const created = await mdsAdmin(['companies', 'create', '--name', 'Cli Co'], { env: env() });
    expect(created).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^company_id +[\w-]+$/m);
    expect(created.stdout).toMatch(/^name +Cli Co$/m);
    expect(created.stdout).not.toMatch(/[{}"]/);
    const companyId = /^company_id +([\w-]+)$/m.exec(created.stdout)![1]!;

    const shown = await mdsAdmin(['--json', 'companies', 'show', companyId], { env: env() });
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ company_id: companyId, name: 'Cli Co' });

    const key = await mdsAdmin(['keys', 'issue', companyId, '--label', 'cli', '--json'], { env: env() });
    expect(key.code).toBe(0);
    expect(JSON.parse(key.stdout)).toMatchObject({ label: 'cli', api_key: expect.stringMatching(/^mds_/) });
    const humanKey = await mdsAdmin(['keys', 'issue', companyId], { env: env() });
    expect(humanKey.stdout).toMatch(
      /^The API key is shown this once: keep it now.\nkey_id +\S+\napi_key +mds_\S+$/m,
    );

    const list = await mdsAdmin(['companies', 'list'], { env: env() });
    expect(list.stdout).toMatch(/^companies:\n {2}COMPANY_ID +NAME +CREATED_AT$/m);
    expect(list.stdout).toMatch(new RegExp(`^ {2}${companyId} +Cli Co +\\d{4}-`, 'm'));

    const bad = await mdsAdmin(['webhook', 'set', companyId, 'not a url'], { env: env() });
    expect(bad).toMatchObject({ code: 1, stdout: '' });
    expect(bad.stderr).toMatch(
      new RegExp(
        `^mds-admin: 422 Validation failed: .*\\(PUT ${stack.url}/admin/v1/companies/${companyId}/webhook\\)\n {2}#/url: `,
        's',
      ),
    );
    const badJson = await mdsAdmin(['webhook', 'set', companyId, 'not a url', '--json'], { env: env() });
    expect(badJson.code).toBe(1);
    expect(JSON.parse(badJson.stderr)).toMatchObject({ status: 422, errors: [{ pointer: '#/url' }] });

    const wrongToken = await mdsAdmin(['companies', 'list'], {
      env: { ...env(), REGISTRY_ADMIN_TOKEN: 'not-the-token' },
    });
    expect(wrongToken).toMatchObject({ code: 1, stderr: expect.stringMatching(/^mds-admin: 401 /) });
  });

  it('registers a bot with its token from standard input or from a file, never from the command line', async () => {
    const companyId = await createCompany(stack, 'Token Co');
    const simulatorToken = async (messenger: string) =>
      (
        (await (
          await fetch(`${stack.simulator.url}/control/bots`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ messenger, username: `cli_${randomUUID().slice(0, 8)}_bot` }),
          })
        ).json()) as { token: string }
      ).token;
    const viaStdin = await mdsAdmin(
      ['bots', 'add', companyId, '--messenger', 'telegram', '--name', 'piped', '--json'],
      { env: env(), input: `${await simulatorToken('telegram')}\n` },
    );
    expect(viaStdin).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(viaStdin.stdout)).toMatchObject({
      name: 'piped',
      messenger: 'telegram',
      default: true,
    });

    const dir = await mkdtemp(join(tmpdir(), 'mds-admin-'));
    const file = join(dir, 'max-token');
    await writeFile(file, `${await simulatorToken('max')}\n`, { mode: 0o600 });
    const viaFile = await mdsAdmin(
      ['bots', 'add', companyId, '--messenger', 'max', '--name', 'filed', '--token-file', file],
      {
        env: env(),
      },
    );
    expect(viaFile).toMatchObject({ code: 0, stderr: '' });
    expect(viaFile.stdout).toMatch(/^name +filed$/m);

    const bots = await mdsAdmin(['bots', 'list', companyId, '--json'], { env: env() });
    expect((JSON.parse(bots.stdout) as { bots: { name: string }[] }).bots.map((b) => b.name).sort()).toEqual([
      'filed',
      'piped',
    ]);
    const wrongToken = await mdsAdmin(
      ['bots', 'add', companyId, '--messenger', 'telegram', '--name', 'wrong'],
      {
        env: env(),
        input: '123:not-a-token-the-messenger-knows',
      },
    );
    expect(wrongToken).toMatchObject({ code: 1, stdout: '' });
    expect(wrongToken.stderr).toMatch(
      new RegExp(`\\(POST ${stack.url}/admin/v1/companies/${companyId}/bots\\)`),
    );
  });
});

describe('API keys', () => {
  it('are shown once, resolve to their company over gRPC, and stop resolving when revoked', async () => {
    const companyId = await createCompany(stack);
    const issued = await admin<{ key_id: string; api_key: string }>(
      stack,
      'POST',
      `/companies/${companyId}/api-keys`,
      { label: 'backend' },
    );
    expect(issued.status).toBe(201);
    const { api_key: apiKey, key_id: keyId } = issued.body;
    const shown = JSON.stringify((await admin(stack, 'GET', `/companies/${companyId}`)).body);
    expect(shown).toContain(keyId);
    expect(shown).not.toContain(apiKey);
    // Issued without naming scopes: everything but change_phone.
    await expect(unary(client, 'resolveApiKey', { apiKey })).resolves.toEqual({
      companyId,
      keyId,
      scopes: ['send', 'check', 'read'],
    });
    const scoped = await admin<{ api_key: string; scopes: string[] }>(
      stack,
      'POST',
      `/companies/${companyId}/api-keys`,
      {
        scopes: ['change_phone', 'read'],
      },
    );
    expect(scoped.body.scopes).toEqual(['change_phone', 'read']);
    await expect(unary(client, 'resolveApiKey', { apiKey: scoped.body.api_key })).resolves.toMatchObject({
      scopes: ['change_phone', 'read'],
    });
    const unknownScope = await admin(stack, 'POST', `/companies/${companyId}/api-keys`, {
      scopes: ['admin'],
    });
    expect(unknownScope.status).toBe(422);

    const wrongSecret = `${apiKey.slice(0, -1)}${apiKey.endsWith('A') ? 'B' : 'A'}`;
    const notFound: unknown = await unary(client, 'resolveApiKey', { apiKey: wrongSecret }).catch(
      (e: unknown) => e,
    );
    expect(isGrpcError(notFound, grpc.status.NOT_FOUND)).toBe(true);

    expect((await admin(stack, 'DELETE', `/companies/${companyId}/api-keys/${keyId}`)).status).toBe(204);
    const revoked: unknown = await unary(client, 'resolveApiKey', { apiKey }).catch((e: unknown) => e);
    expect(isGrpcError(revoked, grpc.status.PERMISSION_DENIED)).toBe(true);
    expect((await admin(stack, 'DELETE', `/companies/${companyId}/api-keys/nope`)).status).toBe(404);

    const event = await eventually('ApiKeyIssued', () =>
      accounts.events.find((e) => e.event.$case === 'apiKeyIssued' && e.event.value.keyId === keyId),
    );
    expect(JSON.stringify(topics.account.codec.toJSON(event))).not.toContain(apiKey);
  });

  it('are listed by id (unrevoked ones only), page by page', async () => {
    const companyId = await createCompany(stack);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (await admin<{ key_id: string }>(stack, 'POST', `/companies/${companyId}/api-keys`, {})).body.key_id,
      );
    expect((await admin(stack, 'DELETE', `/companies/${companyId}/api-keys/${ids[1]}`)).status).toBe(204);
    const listed: string[] = [];
    let after = '';
    do {
      const page = await unary(client, 'listApiKeyIds', { afterKeyId: after, limit: 2 });
      expect(page.keyIds.length).toBeLessThanOrEqual(2);
      listed.push(...page.keyIds);
      after = page.nextAfterKeyId;
    } while (after);
    expect(listed).toEqual([...listed].sort());
    expect(listed).toContain(ids[0]);
    expect(listed).toContain(ids[2]);
    expect(listed).not.toContain(ids[1]);
  });
});

describe('bots', () => {
  it('are registered after the messenger confirms the token, which is sealed in events and never logged', async () => {
    const companyId = await createCompany(stack);
    const { botId, token } = await registerBot(stack, companyId, 'telegram', 'shop');
    const max = await registerBot(stack, companyId, 'max', 'maxshop');
    const bots = (
      await admin<{ bots: { name: string; username: string; default: boolean }[] }>(
        stack,
        'GET',
        `/companies/${companyId}/bots`,
      )
    ).body.bots;
    expect(bots.map((b) => [b.name, b.default]).sort()).toEqual([
      ['maxshop', true],
      ['shop', true],
    ]);
    // The username is what the messenger said the bot is called.
    expect(bots.every((b) => b.username.startsWith(`${b.name}_`) && b.username.endsWith('_bot'))).toBe(true);
    await expect(unary(client, 'getBotCredentials', { botId })).resolves.toMatchObject({
      botId,
      companyId,
      messenger: 1,
      name: 'shop',
      token,
    });
    await expect(unary(client, 'getBotCredentials', { botId: max.botId })).resolves.toMatchObject({
      messenger: 2,
      token: max.token,
    });
    const listed = await unary(client, 'listBots', { messenger: 2 });
    expect(listed.bots.map((b) => b.botId)).toContain(max.botId);
    expect(listed.bots.every((b) => b.messenger === 2)).toBe(true);

    const registered = await eventually('BotRegistered', () =>
      accounts.events.find((e) => e.event.$case === 'botRegistered' && e.event.value.botId === botId),
    );
    const raw = Buffer.from(topics.account.codec.encode(registered));
    expect(raw.includes(Buffer.from(token))).toBe(false);
    expect(stack.logs.join('')).not.toContain(token);
    expect(stack.logs.join('')).not.toContain(max.token);
  });

  it('are refused with a clear code: bad token, taken name, a bot of another company', async () => {
    const companyId = await createCompany(stack);
    const badToken = await admin<{ code: string; errors: { pointer: string }[] }>(
      stack,
      'POST',
      `/companies/${companyId}/bots`,
      {
        messenger: 'telegram',
        name: 'shop',
        token: '123456:not-a-real-token-of-any-bot-here',
      },
    );
    expect(badToken.status).toBe(422);
    expect(badToken.body.code).toBe('invalid_bot_token');
    expect(badToken.body.errors[0]!.pointer).toBe('#/token');

    const { token } = await registerBot(stack, companyId, 'telegram', 'shop');
    const other = await fetch(`${stack.simulator.url}/control/bots`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messenger: 'telegram', username: 'second_bot' }),
    }).then((r) => r.json() as Promise<{ token: string }>);
    const taken = await admin<{ code: string }>(stack, 'POST', `/companies/${companyId}/bots`, {
      messenger: 'telegram',
      name: 'shop',
      token: other.token,
    });
    expect([taken.status, taken.body.code]).toEqual([409, 'bot_name_taken']);
    const thief = await createCompany(stack, 'Thief');
    const stolen = await admin<{ code: string }>(stack, 'POST', `/companies/${thief}/bots`, {
      messenger: 'telegram',
      name: 'mine',
      token,
    });
    expect([stolen.status, stolen.body.code]).toEqual([409, 'bot_already_registered']);
    const badName = await admin(stack, 'POST', `/companies/${companyId}/bots`, {
      messenger: 'viber',
      name: 'a b',
      token: 'x',
    });
    expect(badName.status).toBe(422);
  });
});

describe('text from outside and from callers', () => {
  it('a messenger refusing a token in words of NUL, controls and a megabyte: 422 with those words clean and short', async () => {
    const companyId = await createCompany(stack);
    for (const [messenger, method, hostile] of [
      ['telegram', 'getMe', 'huge'],
      ['max', 'me', 'controls'],
      ['telegram', 'getMe', 'invalid-utf8'],
    ] as const) {
      const created = (await (
        await fetch(`${stack.simulator.url}/control/bots`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ messenger, username: `hostile_${randomUUID().slice(0, 6)}_bot` }),
        })
      ).json()) as { id: number; token: string };
      await fetch(`${stack.simulator.url}/control/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ kind: 'hostile-error', bot_id: created.id, method, hostile, status: 401 }),
      });
      const name = `${hostile.replace('-', '_')}_${messenger}`;
      const refused = await admin<{ code: string; detail: string; errors: { detail: string }[] }>(
        stack,
        'POST',
        `/companies/${companyId}/bots`,
        { messenger, name, token: created.token },
      );
      expect([refused.status, refused.body.code]).toEqual([422, 'invalid_bot_token']);
      for (const words of [refused.body.detail, refused.body.errors[0]!.detail]) {
        expect(isCleanText(words), words.slice(0, 200)).toBe(true);
        expect(words.length).toBeLessThan(600);
        expect(words).toContain('\ufffd');
      }
      // The fault is spent: the same token now registers.
      const registered = await admin(stack, 'POST', `/companies/${companyId}/bots`, {
        messenger,
        name,
        token: created.token,
      });
      expect(registered.status).toBe(201);
    }
  });

  it('a company name, a key label or a webhook URL with characters no text may hold: 422 invalid_characters', async () => {
    const named = await admin<{ errors: { pointer: string; code: string }[] }>(stack, 'POST', '/companies', {
      name: 'Acme \u0000 Ltd',
    });
    expect([named.status, named.body.errors]).toEqual([
      422,
      [expect.objectContaining({ pointer: '#/name', code: 'invalid_characters' })],
    ]);
    const companyId = await createCompany(stack);
    const labelled = await admin<{ errors: { pointer: string; code: string }[] }>(
      stack,
      'POST',
      `/companies/${companyId}/api-keys`,
      { label: 'ci \u001b[31m' },
    );
    expect([labelled.status, labelled.body.errors]).toEqual([
      422,
      [expect.objectContaining({ pointer: '#/label', code: 'invalid_characters' })],
    ]);
    const hooked = await admin<{ errors: { pointer: string; code: string }[] }>(
      stack,
      'PUT',
      `/companies/${companyId}/webhook`,
      { url: 'https://example.com/\ud800' },
    );
    expect([hooked.status, hooked.body.errors]).toEqual([
      422,
      [expect.objectContaining({ pointer: '#/url', code: 'invalid_characters' })],
    ]);
  });
});

describe('bot checks (for the dashboard)', () => {
  it("ask the messenger about a registered bot's token now: usable, then refused once the messenger forgets it", async () => {
    const companyId = await createCompany(stack);
    const created = (await (
      await fetch(`${stack.simulator.url}/control/bots`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messenger: 'telegram', username: `check_${randomUUID().slice(0, 6)}_bot` }),
      })
    ).json()) as { id: number; token: string; username: string };
    const { bot_id: botId } = (
      await admin<{ bot_id: string }>(stack, 'POST', `/companies/${companyId}/bots`, {
        messenger: 'telegram',
        name: 'checked',
        token: created.token,
      })
    ).body;
    const ok = await admin<{ ok: boolean; username: string }>(
      stack,
      'POST',
      `/companies/${companyId}/bots/${botId}/check`,
    );
    expect([ok.status, ok.body.ok, ok.body.username]).toEqual([200, true, created.username]);

    await fetch(`${stack.simulator.url}/control/bots/${created.id}`, { method: 'DELETE' });
    const refused = await admin<{ ok: boolean; reason: string }>(
      stack,
      'POST',
      `/companies/${companyId}/bots/${botId}/check`,
    );
    expect([refused.status, refused.body.ok, refused.body.reason]).toEqual([200, false, 'rejected']);

    const other = await createCompany(stack, 'Other');
    const foreign = await admin<{ code: string }>(stack, 'POST', `/companies/${other}/bots/${botId}/check`);
    expect([foreign.status, foreign.body.code]).toEqual([404, 'bot_not_found']);
  });
});

describe('the webhook endpoint', () => {
  it('gets a whsec_ secret, rotates keeping the old one for a while, and is served over gRPC', async () => {
    const companyId = await createCompany(stack);
    expect((await admin(stack, 'PUT', `/companies/${companyId}/webhook`, { url: 'ftp://x' })).status).toBe(
      422,
    );
    expect(
      (await admin(stack, 'PUT', `/companies/${companyId}/webhook`, { url: 'https://acme.example/hooks' }))
        .status,
    ).toBe(200);
    const first = (
      await admin<{ secrets: { secret: string }[] }>(stack, 'GET', `/companies/${companyId}/webhook/secrets`)
    ).body.secrets;
    expect(first).toHaveLength(1);
    expect(first[0]!.secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    const rotated = await admin<{ secret: string }>(
      stack,
      'POST',
      `/companies/${companyId}/webhook/rotate-secret`,
    );
    const endpoint = await unary(client, 'getWebhookEndpoint', { companyId, endpointId: '' });
    expect(endpoint.url).toBe('https://acme.example/hooks');
    expect(endpoint.enabled).toBe(true);
    expect(endpoint.secrets.map((s) => s.secret)).toEqual([rotated.body.secret, first[0]!.secret]);
    expect(endpoint.secrets[0]!.expiresAt).toBeUndefined();
    expect(endpoint.secrets[1]!.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    expect((await admin(stack, 'POST', `/companies/${companyId}/webhook/disable`)).status).toBe(200);
    expect((await unary(client, 'getWebhookEndpoint', { companyId, endpointId: '' })).enabled).toBe(false);
    const none: unknown = await unary(client, 'getWebhookEndpoint', {
      companyId: await createCompany(stack),
      endpointId: '',
    }).catch((e: unknown) => e);
    expect(isGrpcError(none, grpc.status.NOT_FOUND)).toBe(true);
  });
});

describe('a webhook URL with a user name or password', () => {
  it('is refused with 422 and a field error coded userinfo_not_allowed; a query is kept as given', async () => {
    const companyId = await createCompany(stack);
    for (const url of [
      'https://user:pw@acme.example/hooks',
      'https://user@acme.example/hooks',
      'https://@acme.example/',
    ]) {
      const refused = await admin<{ code: string; errors: { pointer: string; code: string }[] }>(
        stack,
        'PUT',
        `/companies/${companyId}/webhook`,
        { url },
      );
      expect(refused.status).toBe(422);
      expect(refused.body.code).toBe('validation_failed');
      expect(refused.body.errors).toEqual([
        expect.objectContaining({ pointer: '#/url', code: 'userinfo_not_allowed' }),
      ]);
    }
    const withQuery = 'https://acme.example/hooks?token=receiver-token';
    expect((await admin(stack, 'PUT', `/companies/${companyId}/webhook`, { url: withQuery })).status).toBe(
      200,
    );
    expect((await unary(client, 'getWebhookEndpoint', { companyId, endpointId: '' })).url).toBe(withQuery);
  });
});

describe('DisableWebhookEndpoint (for webhook-dispatcher)', () => {
  it('turns the endpoint off once with the reason, and answers NOT_FOUND without an endpoint', async () => {
    const companyId = await createCompany(stack);
    await admin(stack, 'PUT', `/companies/${companyId}/webhook`, { url: 'https://acme.example/gone' });
    await expect(
      unary(client, 'disableWebhookEndpoint', {
        companyId,
        reason: '410 Gone from the endpoint',
        endpointId: '',
      }),
    ).resolves.toEqual({ disabled: true });
    await expect(
      unary(client, 'disableWebhookEndpoint', { companyId, reason: 'again', endpointId: '' }),
    ).resolves.toEqual({
      disabled: false,
    });
    expect((await unary(client, 'getWebhookEndpoint', { companyId, endpointId: '' })).enabled).toBe(false);
    const view = await admin<{ webhook: { enabled: boolean; disabled_reason: string } }>(
      stack,
      'GET',
      `/companies/${companyId}`,
    );
    expect(view.body.webhook).toMatchObject({
      enabled: false,
      disabled_reason: '410 Gone from the endpoint',
    });
    const disabled = await eventually('WebhookEndpointDisabled', () => {
      const found = accounts.events.filter(
        (e) => e.metadata.streamId === companyId && e.event.$case === 'webhookEndpointDisabled',
      );
      return found.length > 0 && found;
    });
    expect(disabled).toHaveLength(1);
    // Re-enabling stays the admin API's.
    expect((await admin(stack, 'POST', `/companies/${companyId}/webhook/enable`)).status).toBe(200);
    expect((await unary(client, 'getWebhookEndpoint', { companyId, endpointId: '' })).enabled).toBe(true);

    for (const missing of [await createCompany(stack), randomUUID()]) {
      const error: unknown = await unary(client, 'disableWebhookEndpoint', {
        companyId: missing,
        reason: 'x',
        endpointId: '',
      }).catch((e: unknown) => e);
      expect(isGrpcError(error, grpc.status.NOT_FOUND)).toBe(true);
    }
  });
});

describe('clients, links and routing', () => {
  it('a person who started the bot and shared their contact is linked, checked, and messages route to their chat', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    const chat = chatOf(botId, '5001');
    await publishBotUpdates(stack, [
      botUpdate(companyId, { $case: 'personStartedBot', value: { chat, providerUpdateId: '1' } }),
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat, providerUpdateId: '2', phoneNumber: '79123456789' },
      }),
    ]);
    await eventually('ClientLinked', () =>
      clientEvents.events.find((e) => e.metadata.companyId === companyId && e.event.$case === 'clientLinked'),
    );

    const checkId = await request(stack, companyId, {
      $case: 'clientCheckRequested',
      value: { phoneNumber: '79123456789', apiKeyId: 'k', idempotencyKey: '' },
    });
    const checked = await eventually('ClientChecked', () =>
      outcomes.events.find((e) => e.metadata.streamId === checkId && e.event.$case === 'clientChecked'),
    );
    // The number is sealed in the log; opened with the person's key it is the one asked about.
    expect(checked.event.value).toMatchObject({ phoneNumber: '', sealed: expect.anything() });
    const [opened] = await openRecords(registryPersonKeys({ address: stack.grpc, token: INTERNAL_TOKEN }), [
      checked,
    ]);
    expect(opened!.event.value).toEqual({
      phoneNumber: '79123456789',
      exists: true,
      bots: [{ messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop', reachable: true }],
      sealed: expect.anything(),
    });
    expect(checked.metadata.correlationId).toBe(checkId);
    const client = await admin<{
      links: { bot_id: string; reachable: boolean; unreachable_reason: null; since: string }[];
    }>(stack, 'GET', `/companies/${companyId}/clients/79123456789`);
    expect(client.body.links).toEqual([
      expect.objectContaining({
        bot_id: botId,
        reachable: true,
        unreachable_reason: null,
        since: expect.stringMatching(/^\d{4}-/),
      }),
    ]);

    const messageId = await sendMessage(stack, companyId, '79123456789', 1);
    const routed = await workOrder(messageId);
    expect(routed.metadata.streamId).toBe(botId);
    expect(routed.value).toMatchObject({
      chat: { botId, chatId: '5001' },
      botName: 'shop',
      text: 'hi',
      buttons: [{ text: 'Open', url: 'https://example.com' }],
    });
    expect(routed.value.deliverBefore!.getTime()).toBeGreaterThan(Date.now());

    // With ttl_seconds: routed with its expiry while it lasts; routed nowhere (EXPIRED) once it passed.
    const expiring = (inMs: number) => {
      const record = messageAccepted(companyId, '79123456789', 1);
      if (record.event.$case === 'messageAccepted')
        record.event.value.expiresAt = new Date(Date.now() + inMs);
      return record;
    };
    const fresh = expiring(60_000);
    const freshOrder = await workOrder(await publishMessage(stack, fresh));
    expect(freshOrder.value.expiresAt).toEqual(
      fresh.event.$case === 'messageAccepted' ? fresh.event.value.expiresAt : undefined,
    );
    expect((await unroutable(await publishMessage(stack, expiring(-1_000)))).errorCode).toBe('EXPIRED');

    // With send_at: routed at once with its time, the delivery deadline counted from it; a cancel goes to
    // the sender of its messenger, keyed by the message.
    const scheduled = messageAccepted(companyId, '79123456789', 1);
    const sendAt = new Date(Date.now() + 3_600_000);
    if (scheduled.event.$case === 'messageAccepted') scheduled.event.value.sendAt = sendAt;
    const scheduledOrder = await workOrder(await publishMessage(stack, scheduled));
    expect(scheduledOrder.value.sendAt).toEqual(sendAt);
    expect(scheduledOrder.value.deliverBefore!.getTime()).toBeGreaterThan(sendAt.getTime());
    await publishMessage(
      stack,
      messageEvent(companyId, scheduled.metadata.streamId, {
        $case: 'messageCancelRequested',
        value: { messenger: 1, apiKeyId: 'k' },
      }),
    );
    const cancel = await eventually('DeliveryCancelRequested', () =>
      deliveries.events.find(
        (e) =>
          e.event.$case === 'deliveryCancelRequested' &&
          e.event.value.messageId === scheduled.metadata.streamId,
      ),
    );
    expect(cancel.metadata.streamId).toBe(scheduled.metadata.streamId);
  });

  it('finds no route with the documented codes: unknown client, unknown bot, no default bot, blocked', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    const chat = chatOf(botId, '6001');
    await publishBotUpdates(stack, [
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat, providerUpdateId: '1', phoneNumber: '79123450001' },
      }),
    ]);
    await eventually('linked', () => clientEvents.events.find((e) => e.metadata.companyId === companyId));
    const failure = unroutable;

    expect((await failure(await sendMessage(stack, companyId, '79123450999', 1))).errorCode).toBe(
      'CLIENT_NOT_FOUND',
    );
    expect((await failure(await sendMessage(stack, companyId, '79123450001', 1, 'nope'))).errorCode).toBe(
      'UNKNOWN_BOT',
    );
    expect((await failure(await sendMessage(stack, companyId, '79123450001', 2))).errorCode).toBe(
      'NO_DEFAULT_BOT',
    );
    await publishBotUpdates(stack, [
      botUpdate(companyId, { $case: 'personBlockedBot', value: { chat, providerUpdateId: '2', reason: 1 } }),
    ]);
    await eventually('unreachable', () =>
      clientEvents.events.find(
        (e) => e.metadata.companyId === companyId && e.event.$case === 'clientLinkReachabilityChanged',
      ),
    );
    expect((await failure(await sendMessage(stack, companyId, '79123450001', 1))).errorCode).toBe(
      'BOT_BLOCKED_BY_USER',
    );
    const client = await admin<{ links: { reachable: boolean; unreachable_reason: string }[] }>(
      stack,
      'GET',
      `/companies/${companyId}/clients/79123450001`,
    );
    expect(client.body.links.map((l) => [l.reachable, l.unreachable_reason])).toEqual([[false, 'blocked']]);
  });

  it('routes a fallback channel by channel: a channel not reached goes to its sender, the next is routed from its MessageAttemptFailed, a cancel names its channel', async () => {
    const companyId = await createCompany(stack);
    await registerBot(stack, companyId, 'telegram', 'shop');
    const { botId: maxBotId } = await registerBot(stack, companyId, 'max', 'maxshop');
    const phone = '79123457001';
    await publishBotUpdates(stack, [
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat: chatOf(maxBotId, '7001', 2), providerUpdateId: '1', phoneNumber: phone },
      }),
    ]);
    await eventually('linked on MAX', () =>
      clientEvents.events.find((e) => e.metadata.companyId === companyId && e.event.$case === 'clientLinked'),
    );
    const keys = registryPersonKeys({ address: stack.grpc, token: INTERNAL_TOKEN });
    const plain = messageAccepted(companyId, phone, 1);
    const expiresAt = new Date(Date.now() + 600_000);
    const first = {
      channel: 0,
      current: { messenger: Messenger.MESSENGER_TELEGRAM, botName: '' },
      next: [{ messenger: Messenger.MESSENGER_MAX, botName: 'maxshop' }],
      tried: [],
    };
    if (plain.event.$case === 'messageAccepted')
      Object.assign(plain.event.value, { expiresAt, fallback: first });
    const [accepted] = await sealRecords(keys, [plain]);
    const messageId = await publishMessage(stack, accepted!);
    const sealed = accepted!.event.$case === 'messageAccepted' ? accepted!.event.value.sealed : undefined;

    // Channel 0 (Telegram's default bot, which the person never started): failed by Telegram's sender, with
    // the bot as resolved and what that sender needs to pass the message on.
    const notThere = await unroutable(messageId);
    expect(notThere).toMatchObject({
      errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
      fallback: { ...first, current: { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop' } },
      expiresAt,
      sealed,
    });
    expect(
      deliveries.events.some(
        (e) => e.event.$case === 'deliveryUnroutable' && e.event.value.messageId === messageId,
      ),
    ).toBe(true);

    // The sender decided MessageAttemptFailed: the registry routes the next channel from it alone.
    const attempt = {
      messenger: Messenger.MESSENGER_TELEGRAM,
      botName: 'shop',
      botId: '',
      errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
      errorDescription: notThere.errorDescription,
      failedAt: new Date(),
    };
    const failedEvent = messageEvent(companyId, messageId, {
      $case: 'messageAttemptFailed',
      value: { route: notThere.fallback, attempt, acceptedAt: notThere.acceptedAt, expiresAt, sealed },
    });
    await publishMessage(stack, failedEvent);
    const second = await eventually('DeliveryRequested to MAX', () =>
      maxDeliveries.events.find(
        (e) => e.event.$case === 'deliveryRequested' && e.event.value.messageId === messageId,
      ),
    );
    const secondRoute = {
      channel: 1,
      current: { messenger: Messenger.MESSENGER_MAX, botName: 'maxshop' },
      next: [],
      tried: [attempt],
    };
    expect(second.metadata).toMatchObject({
      eventId: derivedEventId(failedEvent.metadata.eventId, 'routed'),
      streamId: maxBotId,
    });
    expect(second.event.value).toMatchObject({
      chat: { botId: maxBotId, chatId: '7001' },
      botName: 'maxshop',
      sealed,
      acceptedAt: notThere.acceptedAt,
      expiresAt,
      fallback: secondRoute,
    });
    if (second.event.$case === 'deliveryRequested')
      expect(second.event.value.deliverBefore!.getTime()).toBeGreaterThan(notThere.acceptedAt!.getTime());

    // A cancel at the MAX channel goes to MAX's sender, naming that channel.
    await publishMessage(
      stack,
      messageEvent(companyId, messageId, {
        $case: 'messageCancelRequested',
        value: { messenger: 2, apiKeyId: 'k', fallback: secondRoute },
      }),
    );
    const cancel = await eventually('DeliveryCancelRequested to MAX', () =>
      maxDeliveries.events.find(
        (e) => e.event.$case === 'deliveryCancelRequested' && e.event.value.messageId === messageId,
      ),
    );
    expect(cancel.event.value).toEqual({ messageId, fallback: secondRoute });

    // A step naming no channel left (no sender of this build writes one) ends its message here, with that
    // channel's failure, rather than leaving it new forever.
    const lastStep = messageEvent(companyId, messageId, {
      $case: 'messageAttemptFailed',
      value: { route: secondRoute, attempt: { ...attempt, messenger: 2, botName: 'maxshop' }, sealed },
    });
    await publishMessage(stack, lastStep);
    const ended = await eventually('the message failed at its last channel', () =>
      messages.events.find(
        (e) => e.metadata.eventId === derivedEventId(lastStep.metadata.eventId, 'routing-failed'),
      ),
    );
    expect(ended.event).toMatchObject({
      $case: 'messageDeliveryFailed',
      value: { errorCode: 'CLIENT_NOT_LINKED_TO_BOT', fallback: secondRoute },
    });

    // A message without a fallback: its orders are as they always were.
    const without = await unroutable(await sendMessage(stack, companyId, phone, 1));
    expect(without).toEqual({
      messageId: expect.any(String),
      errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
      errorDescription: expect.any(String),
      acceptedAt: expect.any(Date),
      fallback: undefined,
      expiresAt: undefined,
      sendAt: undefined,
      sealed: undefined,
    });
  });

  it('ignores a fact older than the one that last changed the link: a stale block after a start leaves it reachable', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    const chat = chatOf(botId, '6501');
    const at = (second: number) => new Date(Date.UTC(2026, 10, 24, 10, 0, second));
    const dated = (record: ReturnType<typeof botUpdate>, second: number) => ({
      ...record,
      metadata: { ...record.metadata, occurredAt: at(second) },
    });
    await publishBotUpdates(stack, [
      dated(
        botUpdate(companyId, {
          $case: 'contactShared',
          value: { chat, providerUpdateId: '1', phoneNumber: '79123456501' },
        }),
        1,
      ),
      dated(
        botUpdate(companyId, {
          $case: 'personBlockedBot',
          value: { chat, providerUpdateId: '2', reason: 1 },
        }),
        2,
      ),
      dated(botUpdate(companyId, { $case: 'personStartedBot', value: { chat, providerUpdateId: '3' } }), 5),
      // A refused send's block from before the start, republished by a sender after a crash.
      dated(
        botUpdate(companyId, {
          $case: 'personBlockedBot',
          value: { chat, providerUpdateId: 'send:x', reason: 3 },
        }),
        4,
      ),
    ]);
    const changes = () =>
      clientEvents.events.filter(
        (e) => e.metadata.companyId === companyId && e.event.$case === 'clientLinkReachabilityChanged',
      );
    await eventually('blocked, then reachable again', () => changes().length >= 2);
    const messageId = await sendMessage(stack, companyId, '79123456501', 1);
    await eventually('routed', () => deliveries.events.find((e) => e.event.value.messageId === messageId));
    expect(changes().map((e) => (e.event.value as { reachable: boolean }).reachable)).toEqual([false, true]);
  });

  it('change_phone moves the links: the new number routes to the same chat, the old one to nothing; refusals have codes', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    await publishBotUpdates(stack, [
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat: chatOf(botId, '7001'), providerUpdateId: '1', phoneNumber: '79123457001' },
      }),
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat: chatOf(botId, '7002'), providerUpdateId: '2', phoneNumber: '79123457002' },
      }),
    ]);
    await eventually(
      'two links',
      () => clientEvents.events.filter((e) => e.metadata.companyId === companyId).length === 2,
    );
    const outcome = async (requestId: string) =>
      (
        await eventually('outcome', () =>
          outcomes.events.find(
            (e) => e.metadata.streamId === requestId && e.event.$case !== 'phoneChangeRequested',
          ),
        )
      ).event;
    const change = (oldPhone: string, newPhone: string) =>
      request(stack, companyId, {
        $case: 'phoneChangeRequested',
        value: { oldPhone, newPhone, apiKeyId: 'k', idempotencyKey: '' },
      });

    // The request is in plain text, as the gateway wrote it before sealing existed: still decided. What the
    // registry writes of it seals both numbers under the key of the old number's person.
    const keys = registryPersonKeys({ address: stack.grpc, token: INTERNAL_TOKEN });
    const oldPerson = await keys.obtain(companyId, '79123457001');
    const changeId = await change('79123457001', '79123457999');
    const sealedChange = {
      oldPhone: '',
      newPhone: '',
      sealed: expect.objectContaining({ subjectId: oldPerson.subjectId, keyId: oldPerson.keyId }),
    };
    const changed = await eventually('PhoneChanged', () =>
      outcomes.events.find((e) => e.metadata.streamId === changeId && e.event.$case === 'phoneChanged'),
    );
    expect(changed.event).toEqual({ $case: 'phoneChanged', value: { ...sealedChange, linksMoved: 1 } });
    const moved = await eventually('ClientPhoneChanged', () =>
      clientEvents.events.find(
        (e) => e.metadata.companyId === companyId && e.event.$case === 'clientPhoneChanged',
      ),
    );
    expect(moved.event).toEqual({
      $case: 'clientPhoneChanged',
      value: { ...sealedChange, requestId: changeId },
    });
    for (const opened of await openRecords(keys, [changed, moved]))
      expect(opened.event.value).toMatchObject({ oldPhone: '79123457001', newPhone: '79123457999' });
    keys.close();
    const toNew = await sendMessage(stack, companyId, '79123457999', 1);
    expect((await workOrder(toNew)).value.chat!.chatId).toBe('7001');
    const toOld = await sendMessage(stack, companyId, '79123457001', 1);
    expect(await unroutable(toOld)).toMatchObject({ errorCode: 'CLIENT_NOT_FOUND' });

    for (const [oldPhone, newPhone, code] of [
      ['79123457002', '79123457002', 'SAME_PHONE'],
      ['79123457555', '79123457556', 'OLD_PHONE_NOT_FOUND'],
      ['79123457002', '79123457999', 'NEW_PHONE_IN_USE'],
    ] as const) {
      expect(await outcome(await change(oldPhone, newPhone))).toMatchObject({
        $case: 'phoneChangeRejected',
        value: { errorCode: code },
      });
    }
  });

  it('handles a request delivered twice once: one outcome, not a second decision on the changed state', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    await publishBotUpdates(stack, [
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat: chatOf(botId, '8001'), providerUpdateId: '1', phoneNumber: '79123458001' },
      }),
    ]);
    await eventually('linked', () => clientEvents.events.find((e) => e.metadata.companyId === companyId));
    // Without deduplication the second copy would be decided again and refused (OLD_PHONE_NOT_FOUND).
    const requestId = await request(
      stack,
      companyId,
      {
        $case: 'phoneChangeRequested',
        value: { oldPhone: '79123458001', newPhone: '79123458002', apiKeyId: 'k', idempotencyKey: '' },
      },
      2,
    );
    await eventually('the outcome', () =>
      outcomes.events.find((e) => e.metadata.streamId === requestId && e.event.$case === 'phoneChanged'),
    );
    await new Promise((r) => setTimeout(r, 1_000));
    expect(
      outcomes.events
        .filter((e) => e.metadata.streamId === requestId && e.metadata.producer === 'client-registry')
        .map((e) => e.event.$case),
    ).toEqual(['phoneChanged']);
    expect(
      clientEvents.events.filter(
        (e) => e.metadata.companyId === companyId && e.event.$case === 'clientPhoneChanged',
      ),
    ).toHaveLength(1);
  });

  it('routes a message handled twice again, with ids derived from it: the sender keeps the first decision', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    const record = messageAccepted(companyId, '79123458100', 1);
    const messageId = await publishMessage(stack, record);
    expect(await unroutable(messageId)).toMatchObject({ errorCode: 'CLIENT_NOT_FOUND' });
    await publishBotUpdates(stack, [
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat: chatOf(botId, '8100'), providerUpdateId: '1', phoneNumber: '79123458100' },
      }),
    ]);
    await eventually('linked', () => clientEvents.events.find((e) => e.metadata.companyId === companyId));
    // The same accepted event again, as after a crash before the routing consumer committed its offset:
    // the registry keeps no decision, the telegram sender's journal does (its tests show the first wins).
    await publishMessage(stack, record);
    const routed = await workOrder(messageId);
    expect(routed.value.chat!.chatId).toBe('8100');
    const orders = deliveries.events.filter((e) => e.event.value.messageId === messageId);
    expect(orders.map((e) => e.event.$case)).toEqual(['deliveryUnroutable', 'deliveryRequested']);
    // Both name the accepted event as their cause, and a third copy would repeat their ids.
    expect(new Set(orders.map((e) => e.metadata.causationId))).toEqual(new Set([record.metadata.eventId]));
    expect(
      messages.events.some(
        (e) => e.metadata.streamId === messageId && e.metadata.producer === 'client-registry',
      ),
    ).toBe(false);
  });

  it("keeps companies apart: one company's bot updates and checks never see another's clients", async () => {
    const a = await createCompany(stack, 'A');
    const b = await createCompany(stack, 'B');
    const botA = await registerBot(stack, a, 'telegram', 'shop');
    await registerBot(stack, b, 'telegram', 'shop');
    await publishBotUpdates(stack, [
      // B claims A's bot in the envelope: the bot decides the company, so this links into A.
      botUpdate(b, {
        $case: 'contactShared',
        value: { chat: chatOf(botA.botId, '9001'), providerUpdateId: '1', phoneNumber: '79123459001' },
      }),
    ]);
    await eventually('linked into A', () => clientEvents.events.find((e) => e.metadata.companyId === a));
    const checkB = await request(stack, b, {
      $case: 'clientCheckRequested',
      value: { phoneNumber: '79123459001', apiKeyId: 'k', idempotencyKey: '' },
    });
    const result = await eventually('B check', () =>
      outcomes.events.find((e) => e.metadata.streamId === checkB && e.event.$case === 'clientChecked'),
    );
    expect(result.event.value).toMatchObject({ exists: false, bots: [] });
    expect(clientEvents.events.some((e) => e.metadata.companyId === b)).toBe(false);
  });
});

describe('the state is a projection of the events', () => {
  /** Every state table of the rebuilt schema holds what the live one does. */
  async function expectSameState(live: Knex, rebuiltSchema: string) {
    for (const [table, keys] of Object.entries(STATE_TABLES)) {
      const rows = (schema: string) =>
        live
          .withSchema(schema)
          .from(table)
          .orderBy([...keys])
          .select();
      const [liveRows, rebuiltRows] = await Promise.all([rows(SCHEMA), rows(rebuiltSchema)]);
      expect(liveRows.length, table).toBeGreaterThan(0);
      expect(rebuiltRows, table).toEqual(liveRows);
    }
  }

  it('rebuilt from the log into a fresh schema, it equals the live one', async () => {
    // Wait until the outbox is empty so the log holds every decision made so far.
    const live = await openDatabase({ url: stack.databaseUrl, schema: SCHEMA });
    const rebuiltSchema = uniqueName('registry_rebuilt');
    try {
      await outboxDrained(live);
      const { events } = await rebuildFromLog(stack, rebuiltSchema);
      expect(events).toBeGreaterThan(20);
      await expectSameState(live, rebuiltSchema);
    } finally {
      await live.destroy();
    }
  });

  it('mds-replay rebuild --service client-registry rebuilds it beside the live one, equal to it', async () => {
    // As an operator runs it: the mds-replay bin, which runs this service's mds-registry-rebuild bin.
    const live = await openDatabase({ url: stack.databaseUrl, schema: SCHEMA });
    const rebuiltSchema = uniqueName('registry_replayed');
    const root = join(import.meta.dirname, '../../..');
    try {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [
          join(root, 'node_modules/.bin/mds-replay'),
          'rebuild',
          '--service',
          'client-registry',
          '--schema',
          rebuiltSchema,
        ],
        {
          env: {
            PATH: process.env.PATH ?? '',
            KAFKA_BROKERS: testInfra().kafkaBrokers.join(','),
            KAFKA_TOPIC_PREFIX: stack.topicPrefix,
            DATABASE_URL: stack.databaseUrl,
            REGISTRY_ENCRYPTION_KEYS: stack.encryptionKeys,
          },
        },
      );
      expect(stdout).toMatch(
        new RegExp(`^rebuilt client-registry's state from \\d+ events into schema ${rebuiltSchema}`),
      );
      await expectSameState(live, rebuiltSchema);
    } finally {
      await live.destroy();
    }
  });
});
