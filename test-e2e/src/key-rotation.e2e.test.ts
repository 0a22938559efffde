// Retiring the registry's encryption key with the whole service running as real processes: secrets sealed
// under k1, the registry restarted with k2 first, `mds-admin keys reseal` (the real CLI), k1 dropped; the
// company still sends, and its webhooks still verify with the secrets it was given.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '@mds/local-infra';
import type { Stack } from './harness.js';
import { HttpError, startDeliveryStack, type Sandbox } from './sandbox.js';

const k1 = `k1:${randomBytes(32).toString('base64')}`;
const k2 = `k2:${randomBytes(32).toString('base64')}`;

let stack: Stack;
let sandbox: Sandbox;

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack({
    env: { 'client-registry': { REGISTRY_ENCRYPTION_KEYS: k1 } },
    without: ['dashboard', 'max-sender'],
  }));
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
});

const withKeys = (keys: string) =>
  stack.service('client-registry').restart('SIGTERM', { REGISTRY_ENCRYPTION_KEYS: keys });

async function mdsAdmin(...args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(repoRoot(), 'services/client-registry/bin/mds-admin.js'), '--json', ...args],
    {
      env: {
        ...process.env,
        REGISTRY_URL: stack.url('client-registry'),
        REGISTRY_ADMIN_TOKEN: sandbox.adminToken,
      },
    },
  );
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('retiring the encryption key', () => {
  it('k1 -> k2 first -> mds-admin keys reseal -> k1 dropped: sends and signed webhooks go on', async () => {
    const company = await sandbox.companyWithWebhooks('Key rotation');
    const bot = await sandbox.bot(company.companyId, 'telegram', 'rotation');
    const person = await sandbox.linkedPerson(company.companyId, bot);
    const sendAndCheck = async (text: string) => {
      const eventId = await sandbox.send(company.apiKey, {
        phone_number: person.phone,
        text,
        service: 'telegram',
      });
      expect((await sandbox.finishedState(company.apiKey, eventId)).state).toBe('sent');
      expect((await company.webhooks.waitFor(eventId)).verified).toBe(true);
    };
    await sendAndCheck('sealed under k1');

    // Without k1 before a reseal, the stored secrets cannot be opened.
    await withKeys(k2);
    const unreadable = await sandbox
      .admin('GET', `/companies/${company.companyId}/webhook/secrets`)
      .catch((e: unknown) => e);
    expect(unreadable).toBeInstanceOf(HttpError);
    expect((unreadable as HttpError).status).toBe(500);

    await withKeys(`${k2},${k1}`);
    expect(await mdsAdmin('keys', 'reseal')).toMatchObject({
      key_id: 'k2',
      bot_tokens: 1,
      webhook_secrets: 1,
      failed: [],
    });
    await withKeys(k2);
    const secrets = await sandbox.admin<{ secrets: { secret: string }[] }>(
      'GET',
      `/companies/${company.companyId}/webhook/secrets`,
    );
    expect(secrets.secrets.map((s) => s.secret)).toEqual(company.secrets);
    // Fresh caches: the token and the signing secret come from the registry holding k2 only.
    await stack.service('telegram-sender').restart('SIGTERM');
    await stack.service('webhook-dispatcher').restart('SIGTERM');
    await sendAndCheck('k1 retired');
    expect((await sandbox.inbox(person, bot)).map((m) => m.text)).toEqual(['sealed under k1', 'k1 retired']);
  }, 240_000);
});
