import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Knex } from '@mds/db';
import { uniqueName } from '@mds/local-infra/testing';
import { createAccounts } from './application/accounts.js';
import { databasePersonKeys, resealPersonKeys } from './adapters/db/person-keys-store.js';
import { resealAllSecrets } from './application/reseal.js';
import { accountStore, loadAccount, saveAccount } from './adapters/db/accounts-store.js';
import { messengerTokenChecker } from './adapters/messengers.js';
import { SCHEMA } from './adapters/db/migrations.js';
import { parseKeyring, seal, type Keyring } from './application/secrets.js';
import type { AccountState, SealedSecret } from './domain/accounts.js';
import {
  admin,
  rebuildFromLog,
  createCompany,
  registerBot,
  startRegistryStack,
  type RegistryStack,
  outboxDrained,
} from '../test/support.js';

const k1 = `k1:${randomBytes(32).toString('base64')}`;
const k2 = `k2:${randomBytes(32).toString('base64')}`;

let stack: RegistryStack;
let db: Knex;

beforeAll(async () => {
  stack = await startRegistryStack({ REGISTRY_ENCRYPTION_KEYS: k1 });
  db = await openDatabase({ url: stack.databaseUrl, schema: SCHEMA });
});

afterAll(async () => {
  await db?.destroy();
  await stack?.stop();
});

/** The registry's account commands under a given keyring, on the live registry's database. */
const accountsWith = (keyring: Keyring) =>
  createAccounts({
    db,
    store: accountStore,
    keyring,
    checkBotToken: messengerTokenChecker({
      apiBases: { telegram: stack.simulator.url, max: stack.simulator.url },
      timeoutMs: 5_000,
    }),
    webhookSecretOverlapHours: 24,
    now: () => new Date(),
    onCommitted: () => undefined,
  });

const sealedOf = (state: AccountState) => [
  ...Object.values(state.bots).map((b) => b.token),
  ...state.webhookEndpoints.flatMap((e) => e.secrets.map((s) => s.secret)),
];

/** Every endpoint's signing secrets, opened. */
const signingOf = (accounts: ReturnType<typeof accountsWith>, state: AccountState) =>
  state.webhookEndpoints.flatMap((e) => accounts.signingSecrets(state, e).map((s) => s.secret));

describe('reseal', () => {
  it('renews k1 and unbound secrets under k2, bound to their owners, in the store and in the log', async () => {
    const companyId = await createCompany(stack, 'Reseal');
    const { botId, token } = await registerBot(stack, companyId, 'telegram', 'resealed');
    const other = await registerBot(stack, companyId, 'telegram', 'other');
    expect(
      (await admin(stack, 'PUT', `/companies/${companyId}/webhook`, { url: 'https://a.example/h' })).status,
    ).toBe(200);
    expect((await admin(stack, 'POST', `/companies/${companyId}/webhook/rotate-secret`)).status).toBe(200);
    // A second endpoint, with secrets of its own: the reseal covers every endpoint's.
    const second = await admin<{ endpoint: { id: string } }>(
      stack,
      'POST',
      `/companies/${companyId}/webhook/endpoints`,
      { url: 'https://b.example/h' },
    );
    expect(second.status).toBe(201);
    expect(
      (
        await admin(
          stack,
          'POST',
          `/companies/${companyId}/webhook/endpoints/${second.body.endpoint.id}/rotate-secret`,
        )
      ).status,
    ).toBe(200);

    // A document as a registry from before owners were bound stored it: the token sealed with no owner.
    const ringK1 = parseKeyring(k1);
    await db.transaction(async (trx) => {
      const state = (await loadAccount(trx, companyId))!;
      state.bots[botId] = { ...state.bots[botId]!, token: seal(ringK1, token) };
      await saveAccount(trx, state, new Date().toISOString());
    });
    const before = (await loadAccount(db, companyId))!;
    expect(before.bots[botId]!.token.format).toBeUndefined();
    const accountsK1 = accountsWith(ringK1);
    expect(accountsK1.botToken(before, botId)).toBe(token);
    const signing = signingOf(accountsK1, before);
    expect(signing).toHaveLength(4);

    // A bound ciphertext moved to another bot of the company does not open there.
    const swapped: AccountState = {
      ...before,
      bots: { ...before.bots, [botId]: { ...before.bots[botId]!, token: before.bots[other.botId]!.token } },
    };
    expect(() => accountsK1.botToken(swapped, botId)).toThrow();

    const rotatedRing = parseKeyring(`${k2},${k1}`);
    const rotated = accountsWith(rotatedRing);
    const personKeys = () => resealPersonKeys(db, rotatedRing);
    const report = await resealAllSecrets(rotated, personKeys);
    expect(report).toMatchObject({ keyId: 'k2', failed: [] });
    expect(report.botTokens).toBeGreaterThanOrEqual(2);
    expect(report.webhookSecrets).toBeGreaterThanOrEqual(4);
    expect(await resealAllSecrets(rotated, personKeys)).toMatchObject({
      botTokens: 0,
      webhookSecrets: 0,
      personKeys: 0,
      failed: [],
    });

    // k1 retired: everything opens under k2 alone, the same values.
    const after = (await loadAccount(db, companyId))!;
    for (const s of sealedOf(after)) expect(s).toMatchObject({ keyId: 'k2', format: 1 });
    const accountsK2 = accountsWith(parseKeyring(k2));
    expect(accountsK2.botToken(after, botId)).toBe(token);
    expect(accountsK2.botToken(after, other.botId)).toBe(other.token);
    expect(signingOf(accountsK2, after)).toEqual(signing);

    // Rebuilt from the log, the state holds the renewed values too (SecretsResealed replaced the old ones).
    await outboxDrained(db);
    const schema = uniqueName('registry_resealed');
    await rebuildFromLog(stack, schema, k2);
    const rebuiltDb = await openDatabase({ url: stack.databaseUrl, schema });
    try {
      const rebuilt = (await loadAccount(rebuiltDb, companyId))!;
      for (const s of sealedOf(rebuilt)) expect(s).toMatchObject({ keyId: 'k2', format: 1 });
      expect(accountsK2.botToken(rebuilt, botId)).toBe(token);
      expect(signingOf(accountsK2, rebuilt)).toEqual(signing);
    } finally {
      await rebuiltDb.destroy();
    }
  }, 120_000);

  it('reports a company whose secrets it cannot open, and the admin API answers 500 naming it', async () => {
    const companyId = await createCompany(stack, 'Lost key');
    expect(
      (await admin(stack, 'PUT', `/companies/${companyId}/webhook`, { url: 'https://b.example/h' })).status,
    ).toBe(200);
    const onlyK2 = parseKeyring(k2);
    const report = await resealAllSecrets(accountsWith(onlyK2), () => resealPersonKeys(db, onlyK2));
    expect(report.failed).toEqual(
      expect.arrayContaining([{ companyId, error: 'secret sealed with unknown key k1' }]),
    );
    const viaApi = await admin<{ code: string; detail: string; failed: { company_id: string }[] }>(
      stack,
      'POST',
      '/keys/reseal',
    );
    // The live registry holds k1 only, and the first test resealed a company under k2.
    expect(viaApi.status).toBe(500);
    expect(viaApi.body.code).toBe('reseal_incomplete');
    expect(viaApi.body.failed.length).toBeGreaterThan(0);
    expect(viaApi.body.detail).toContain('unknown key k2');
  });

  // After the tests above: they reseal every row of the database under k2.
  describe('person keys', () => {
    const ring = () => parseKeyring(`${k2},${k1}`);
    const rowOf = async (keyId: string) =>
      (await db('person_keys').where({ key_id: keyId }).first()) as { key: SealedSecret };

    it('are bound to their company, subject and key id: a key moved onto another row does not open', async () => {
      const keys = databasePersonKeys(db, ring());
      const companyId = randomUUID();
      const a = await keys.obtain(companyId, '79990000001');
      const b = await keys.obtain(companyId, '79990000002');
      expect(await keys.get(companyId, a.keyId)).toEqual(a);
      const [sealedA, sealedB] = [(await rowOf(a.keyId)).key, (await rowOf(b.keyId)).key];
      expect(sealedA).toMatchObject({ keyId: 'k2', format: 1 });

      await db('person_keys').where({ key_id: a.keyId }).update({ key: sealedB });
      await expect(keys.get(companyId, a.keyId)).rejects.toThrow();
      await db('person_keys').where({ key_id: a.keyId }).update({ key: sealedA });
      expect(await keys.get(companyId, a.keyId)).toEqual(a);
    });

    it('sealed before they were bound still open, and reseal binds them', async () => {
      const companyId = randomUUID();
      const keyId = randomUUID();
      const material = randomBytes(32);
      // As a registry from before person keys were bound stored one: under k1, no owner.
      await db('person_keys').insert({
        key_id: keyId,
        company_id: companyId,
        subject_id: 'a'.repeat(64),
        key: seal(parseKeyring(k1), material.toString('base64')),
      });
      const keys = databasePersonKeys(db, ring());
      expect(await keys.get(companyId, keyId)).toEqual({ keyId, subjectId: 'a'.repeat(64), key: material });

      expect(await resealPersonKeys(db, ring())).toBe(1);
      expect((await rowOf(keyId)).key).toMatchObject({ keyId: 'k2', format: 1 });
      const underK2 = databasePersonKeys(db, parseKeyring(k2));
      expect(await underK2.get(companyId, keyId)).toEqual({
        keyId,
        subjectId: 'a'.repeat(64),
        key: material,
      });
      expect(await resealPersonKeys(db, ring())).toBe(0);
    });
  });
});
