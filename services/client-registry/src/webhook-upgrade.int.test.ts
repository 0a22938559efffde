import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  newEvent,
  registryV1,
  topics,
  WebhookEndpointConfigured,
  WebhookEndpointDisabled,
  WebhookEndpointEnabled,
  WebhookSecretRotated,
  type AccountEvent,
} from '@mds/contracts';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { clientChannelOptions, grpc, unary } from '@mds/grpc';
import { createTestDatabase, uniqueName } from '@mds/local-infra/testing';
import { migrations, SCHEMA } from './adapters/db/migrations.js';
import { webhookSecretOwner } from './application/webhook-endpoints.js';
import { newWebhookSecret, parseKeyring, seal } from './application/secrets.js';
import { sealed } from './domain/sealed-secrets.js';
import {
  INTERNAL_TOKEN,
  admin,
  rebuildFromLog,
  startRegistryStack,
  type RegistryStack,
} from '../test/support.js';

// An upgrade from the single webhook URL: the registry's log and tables as the release before endpoints left them
// (its migrations, its events without endpoint ids, the documents its fold stored), then this release started on
// them. Each company's URL is its endpoint ep_default with the same secrets and state, served by the new and the
// old questions, and the documents upgrade to exactly what folding the old events gives.

const keys = `k1:${randomBytes(32).toString('base64')}`;
const keyring = parseKeyring(keys);
const topicPrefix = `${uniqueName('regup')}.`;
const start = Date.now();
const at = (minutes: number) => new Date(start - 3_600_000 + minutes * 60_000);
const overlapEnds = new Date(start + 24 * 3_600_000);

/** A company of the previous release: its events (as it wrote them) and the document its fold stored. */
function previousRelease(name: string, story: 'rotated and re-enabled' | 'disabled' | 'no webhook') {
  const companyId = randomUUID();
  const plain = { s1: newWebhookSecret(), s2: newWebhookSecret() };
  const sealedAs = (id: 's1' | 's2') => seal(keyring, plain[id], webhookSecretOwner(companyId, id));
  const secret = { s1: sealedAs('s1'), s2: sealedAs('s2') };
  const url = `https://${name.toLowerCase()}.example/hooks?token=receiver`;
  const events: NonNullable<AccountEvent['event']>[] = [{ $case: 'companyCreated', value: { name } }];
  if (story !== 'no webhook')
    // The fields that release knew, and no other (fromPartial leaves the rest at their defaults, which the
    // wire does not carry): the bytes it wrote.
    events.push({
      $case: 'webhookEndpointConfigured',
      value: WebhookEndpointConfigured.fromPartial({ url, secretId: 's1', secret: sealed(secret.s1) }),
    });
  if (story === 'rotated and re-enabled')
    events.push(
      {
        $case: 'webhookSecretRotated',
        value: WebhookSecretRotated.fromPartial({
          secretId: 's2',
          secret: sealed(secret.s2),
          previousSecretId: 's1',
          previousSecretExpiresAt: overlapEnds,
        }),
      },
      {
        $case: 'webhookEndpointDisabled',
        value: WebhookEndpointDisabled.fromPartial({ reason: 'HTTP 410 Gone' }),
      },
      { $case: 'webhookEndpointEnabled', value: WebhookEndpointEnabled.fromPartial({}) },
    );
  if (story === 'disabled')
    events.push({
      $case: 'webhookEndpointDisabled',
      value: WebhookEndpointDisabled.fromPartial({ reason: 'failing for 5 days' }),
    });
  const records = events.map((event, i) =>
    newEvent<AccountEvent>({
      eventId: randomUUID(),
      occurredAt: at(i),
      companyId,
      streamId: companyId,
      producer: 'client-registry',
      event,
    }),
  );
  // The document that release's evolveAccount folded these events to (services/client-registry before endpoints).
  const webhook =
    story === 'no webhook'
      ? undefined
      : story === 'disabled'
        ? {
            url,
            enabled: false,
            disabledReason: 'failing for 5 days',
            secrets: [{ secretId: 's1', secret: secret.s1, createdAt: at(1).toISOString() }],
          }
        : {
            url,
            enabled: true,
            secrets: [
              {
                secretId: 's1',
                secret: secret.s1,
                createdAt: at(1).toISOString(),
                expiresAt: overlapEnds.toISOString(),
              },
              { secretId: 's2', secret: secret.s2, createdAt: at(2).toISOString() },
            ],
          };
  const document = {
    companyId,
    name,
    createdAt: at(0).toISOString(),
    apiKeys: {},
    ...(webhook ? { webhook } : {}),
    bots: {},
    defaultBots: {},
  };
  return { companyId, url, plain, records, document, updatedAt: at(events.length - 1) };
}

const rotated = previousRelease('Rotated', 'rotated and re-enabled');
const disabled = previousRelease('Disabled', 'disabled');
const without = previousRelease('Without', 'no webhook');
const companies = [rotated, disabled, without];

let databaseUrl: string;
let stack: RegistryStack;
let client: registryV1.RegistryServiceClient;
let db: Knex;

beforeAll(async () => {
  // The previous release's tables: its migrations (every one before endpoints), its documents.
  databaseUrl = await createTestDatabase('regup');
  db = await openDatabase({ url: databaseUrl, schema: SCHEMA });
  await migrateUp(
    db,
    SCHEMA,
    migrations.filter((m) => m.name !== '0011_webhook_endpoints'),
  );
  for (const c of companies)
    await db('accounts').insert({
      company_id: c.companyId,
      name: c.document.name,
      state: JSON.stringify(c.document),
      updated_at: c.updatedAt,
    });

  // This release, started on them (it migrates at start), and the previous release's events in its log.
  stack = await startRegistryStack({
    DATABASE_URL: databaseUrl,
    KAFKA_TOPIC_PREFIX: topicPrefix,
    REGISTRY_ENCRYPTION_KEYS: keys,
  });
  await stack.publisher.publish(
    companies.flatMap((c) =>
      c.records.map((record) => ({ topic: topics.account, key: c.companyId, record })),
    ),
  );
  client = new registryV1.RegistryServiceClient(
    stack.grpc,
    grpc.credentials.createInsecure(),
    clientChannelOptions('mds.registry.v1.RegistryService', { token: INTERNAL_TOKEN }),
  );
}, 120_000);

afterAll(async () => {
  client?.close();
  await stack?.stop();
  await db?.destroy();
});

describe('an upgrade from the single webhook URL', () => {
  it("makes each company's URL its endpoint ep_default, with the same secrets, served by ListWebhookEndpoints and GetWebhookEndpoint", async () => {
    const listed = await unary(client, 'listWebhookEndpoints', { companyId: rotated.companyId });
    expect(listed.endpoints).toEqual([
      {
        endpointId: 'ep_default',
        url: rotated.url,
        description: '',
        eventTypes: [],
        enabled: true,
        disabledReason: '',
        rateLimitPerSecond: 0,
        secrets: [
          { secretId: 's2', secret: rotated.plain.s2 },
          { secretId: 's1', secret: rotated.plain.s1, expiresAt: overlapEnds },
        ],
      },
    ]);
    const single = await unary(client, 'getWebhookEndpoint', {
      companyId: rotated.companyId,
      endpointId: '',
    });
    expect(single).toEqual({ url: rotated.url, enabled: true, secrets: listed.endpoints[0]!.secrets });
    expect(
      await unary(client, 'getWebhookEndpoint', { companyId: rotated.companyId, endpointId: 'ep_default' }),
    ).toEqual(single);

    expect(
      (await unary(client, 'listWebhookEndpoints', { companyId: disabled.companyId })).endpoints,
    ).toEqual([
      expect.objectContaining({
        endpointId: 'ep_default',
        url: disabled.url,
        enabled: false,
        disabledReason: 'failing for 5 days',
        secrets: [{ secretId: 's1', secret: disabled.plain.s1 }],
      }),
    ]);
    expect((await unary(client, 'listWebhookEndpoints', { companyId: without.companyId })).endpoints).toEqual(
      [],
    );
  });

  it('shows the endpoint in the admin API, and the single-URL view as before', async () => {
    const view = await admin<{ webhook: unknown; webhook_endpoints: unknown[] }>(
      stack,
      'GET',
      `/companies/${rotated.companyId}`,
    );
    expect(view.body.webhook).toEqual({
      url: rotated.url,
      enabled: true,
      disabled_reason: null,
      secrets: [
        { secret_id: 's1', created_at: at(1).toISOString(), expires_at: overlapEnds.toISOString() },
        { secret_id: 's2', created_at: at(2).toISOString(), expires_at: null },
      ],
    });
    expect(view.body.webhook_endpoints).toEqual([
      {
        id: 'ep_default',
        url: rotated.url,
        description: '',
        event_types: [],
        enabled: true,
        disabled_reason: null,
        disabled_automatically: false,
        rate_limit_per_second: null,
        secrets: [
          { secret_id: 's2', current: true, expires_at: null },
          { secret_id: 's1', current: false, expires_at: overlapEnds.toISOString() },
        ],
      },
    ]);
    const secrets = await admin<{ secrets: { secret: string }[] }>(
      stack,
      'GET',
      `/companies/${rotated.companyId}/webhook/secrets`,
    );
    expect(secrets.body.secrets.map((s) => s.secret)).toEqual([rotated.plain.s2, rotated.plain.s1]);
  });

  it('keeps the single webhook in the stored documents for a replica of the previous release, unchanged', async () => {
    for (const c of companies) {
      const row = await db('accounts')
        .where({ company_id: c.companyId })
        .first<{ state: Record<string, unknown> }>();
      expect(row.state.webhook, c.document.name).toEqual(c.document.webhook);
      expect(row.state.webhookEndpoints).toHaveLength(c.document.webhook ? 1 : 0);
    }
  });

  it('upgrades each document to exactly what rebuilding from the old events gives', async () => {
    const schema = uniqueName('registry_upgraded');
    await rebuildFromLog(stack, schema);
    const rebuilt = await openDatabase({ url: databaseUrl, schema });
    try {
      for (const c of companies) {
        const state = (d: Knex) =>
          d('accounts').where({ company_id: c.companyId }).first<{ state: unknown }>('state');
        expect(await state(rebuilt), c.document.name).toEqual(await state(db));
      }
    } finally {
      await rebuilt.destroy();
    }
  }, 60_000);

  it('goes on: the single-URL API acts on ep_default, and more endpoints come after it', async () => {
    const rotatedAgain = await admin<{ secret: string }>(
      stack,
      'POST',
      `/companies/${rotated.companyId}/webhook/rotate-secret`,
    );
    expect(rotatedAgain.status).toBe(200);
    const added = await admin<{ endpoint: { id: string } }>(
      stack,
      'POST',
      `/companies/${rotated.companyId}/webhook/endpoints`,
      { url: 'https://second.example/hooks' },
    );
    expect(added.status).toBe(201);
    const listed = await unary(client, 'listWebhookEndpoints', { companyId: rotated.companyId });
    expect(listed.endpoints.map((e) => e.endpointId)).toEqual(['ep_default', added.body.endpoint.id]);
    // The new one current, the two rotated out still signing until they expire.
    expect(listed.endpoints[0]!.secrets.map((s) => s.secret)).toEqual([
      rotatedAgain.body.secret,
      rotated.plain.s1,
      rotated.plain.s2,
    ]);
  });
});
