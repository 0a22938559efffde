import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registryV1, topics, type AccountEvent } from '@mds/contracts';
import { clientChannelOptions, grpc, isGrpcError, unary } from '@mds/grpc';
import {
  ADMIN_TOKEN,
  INTERNAL_TOKEN,
  admin,
  collect,
  createCompany,
  eventually,
  startRegistryStack,
  type RegistryStack,
} from '../test/support.js';
import { mdsAdmin } from '../test/mds-admin.js';

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
});

afterAll(async () => {
  client?.close();
  await accounts?.stop();
  await stack?.stop();
});

interface Rolled {
  key_id: string;
  api_key: string;
  label: string;
  scopes: string[];
  rolled_from: string;
  old_key_expires_at: string;
}

async function companyWithKey() {
  const companyId = await createCompany(stack);
  const issued = await admin<{ key_id: string; api_key: string }>(
    stack,
    'POST',
    `/companies/${companyId}/api-keys`,
    { label: 'backend', scopes: ['send', 'read'] },
  );
  return { companyId, keyId: issued.body.key_id, apiKey: issued.body.api_key };
}

const resolveError = async (apiKey: string) => {
  const error: unknown = await unary(client, 'resolveApiKey', { apiKey }).catch((e: unknown) => e);
  expect(isGrpcError(error, grpc.status.PERMISSION_DENIED)).toBe(true);
  return (error as { details: string }).details;
};

describe('rolling an API key', () => {
  it('makes a new key with the same label and scopes; the old one works, with its end, until the overlap is over', async () => {
    const { companyId, keyId, apiKey } = await companyWithKey();
    const before = Date.now();
    const rolled = await admin<Rolled>(stack, 'POST', `/companies/${companyId}/api-keys/${keyId}/roll`, {
      expires_in_seconds: 3_600,
    });
    expect(rolled.status).toBe(201);
    expect(rolled.body).toMatchObject({ label: 'backend', scopes: ['send', 'read'], rolled_from: keyId });
    expect(rolled.body.api_key).toMatch(/^mds_/);
    const end = Date.parse(rolled.body.old_key_expires_at);
    expect(end).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(end).toBeLessThan(Date.now() + 3_600_000 + 1_000);

    // Both work; the old one says when it ends.
    const old = await unary(client, 'resolveApiKey', { apiKey });
    expect(old.expiresAt?.getTime()).toBe(end);
    const fresh = await unary(client, 'resolveApiKey', { apiKey: rolled.body.api_key });
    expect(fresh).toMatchObject({ companyId, keyId: rolled.body.key_id, scopes: ['send', 'read'] });
    expect(fresh.expiresAt).toBeUndefined();

    const shown = (
      await admin<{ api_keys: Record<string, unknown>[] }>(stack, 'GET', `/companies/${companyId}`)
    ).body.api_keys;
    expect(shown).toContainEqual(
      expect.objectContaining({ key_id: keyId, expires_at: new Date(end).toISOString(), revoked_at: null }),
    );
    expect(shown).toContainEqual(expect.objectContaining({ key_id: rolled.body.key_id, rolled_from: keyId }));
    expect(JSON.stringify(shown)).not.toContain(rolled.body.api_key);

    // As events: the new key (rolled from the old), the old key's end, and no key in plain text.
    const issued = await eventually('ApiKeyIssued', () =>
      accounts.events.find(
        (e) => e.event.$case === 'apiKeyIssued' && e.event.value.keyId === rolled.body.key_id,
      ),
    );
    expect(issued.event).toMatchObject({ value: { rolledFrom: keyId, label: 'backend' } });
    const scheduled = await eventually('ApiKeyExpiryScheduled', () =>
      accounts.events.find((e) => e.event.$case === 'apiKeyExpiryScheduled' && e.event.value.keyId === keyId),
    );
    expect(scheduled.event).toEqual({
      $case: 'apiKeyExpiryScheduled',
      value: { keyId, expiresAt: new Date(end) },
    });
    expect(JSON.stringify(topics.account.codec.toJSON(issued))).not.toContain(rolled.body.api_key);
  });

  it('ends the old key at once with no overlap, and one whose overlap is over is refused as expired', async () => {
    const now = await companyWithKey();
    const atOnce = await admin<Rolled>(
      stack,
      'POST',
      `/companies/${now.companyId}/api-keys/${now.keyId}/roll`,
      {
        expires_in_seconds: 0,
      },
    );
    expect(atOnce.status).toBe(201);
    expect(await resolveError(now.apiKey)).toBe('revoked API key');

    const soon = await companyWithKey();
    const rolled = await admin<Rolled>(
      stack,
      'POST',
      `/companies/${soon.companyId}/api-keys/${soon.keyId}/roll`,
      {
        expires_in_seconds: 1,
      },
    );
    expect(rolled.status).toBe(201);
    await expect(unary(client, 'resolveApiKey', { apiKey: soon.apiKey })).resolves.toMatchObject({
      keyId: soon.keyId,
    });
    await new Promise((resolve) =>
      setTimeout(resolve, Date.parse(rolled.body.old_key_expires_at) - Date.now() + 50),
    );
    expect(await resolveError(soon.apiKey)).toBe('expired API key');
    const listed = await unary(client, 'listApiKeyIds', { afterKeyId: '', limit: 0 });
    expect(listed.keyIds).not.toContain(soon.keyId);
    expect(listed.keyIds).toContain(rolled.body.key_id);
    // A key that has ended cannot be rolled again: its successor can.
    const again = await admin<{ code: string }>(
      stack,
      'POST',
      `/companies/${soon.companyId}/api-keys/${soon.keyId}/roll`,
      { expires_in_seconds: 60 },
    );
    expect(again).toMatchObject({ status: 409, body: { code: 'api_key_ended' } });
  });

  it('refuses an overlap out of range, a missing one, and a key that is not there', async () => {
    const { companyId, keyId, apiKey } = await companyWithKey();
    const roll = (body: unknown, id = keyId) =>
      admin<{ code: string }>(stack, 'POST', `/companies/${companyId}/api-keys/${id}/roll`, body);
    for (const body of [
      { expires_in_seconds: 7 * 86_400 + 1 },
      { expires_in_seconds: -1 },
      { expires_in_seconds: 1.5 },
      { expires_in_seconds: '3600' },
      {},
      { expires_in_seconds: 60, label: 'other' },
    ]) {
      expect({ body, status: (await roll(body)).status }).toEqual({ body, status: 422 });
    }
    expect((await roll({ expires_in_seconds: 60 }, 'nope')).status).toBe(404);
    // Nothing refused changed the key.
    await expect(unary(client, 'resolveApiKey', { apiKey })).resolves.toMatchObject({ keyId });
    expect((await roll({ expires_in_seconds: 7 * 86_400 })).status).toBe(201);
  });

  it('is `mds-admin keys roll` with --overlap', async () => {
    const env = { REGISTRY_URL: stack.url, REGISTRY_ADMIN_TOKEN: ADMIN_TOKEN };
    const { companyId, keyId } = await companyWithKey();
    const run = await mdsAdmin(['keys', 'roll', companyId, keyId, '--overlap', '24h', '--json'], { env });
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const body = JSON.parse(run.stdout) as Rolled;
    expect(body).toMatchObject({ rolled_from: keyId, label: 'backend' });
    expect(Date.parse(body.old_key_expires_at) - Date.now()).toBeGreaterThan(24 * 3_600_000 - 60_000);
    const human = await mdsAdmin(['keys', 'roll', companyId, body.key_id], { env });
    expect(human.stdout).toMatch(/^The new API key is shown this once: keep it now.\n/);
    const bad = await mdsAdmin(['keys', 'roll', companyId, body.key_id, '--overlap', 'soon'], { env });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('"soon" is not a duration');
  }, 60_000);
});
