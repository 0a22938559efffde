import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from '@mds/db';
import { newPersonKeyMaterial, subjectIdOf, type PersonKey, type PersonKeyPort } from '@mds/personal-data';
import type { SealedSecret } from '../../domain/accounts.js';
import { seal, unseal, type Keyring } from '../../application/secrets.js';

interface PersonKeyRow {
  key_id: string;
  company_id: string;
  subject_id: string;
  key: SealedSecret;
}

const toKey = (keyring: Keyring, row: PersonKeyRow): PersonKey => ({
  subjectId: row.subject_id,
  keyId: row.key_id,
  key: Buffer.from(unseal(keyring, row.key), 'base64'),
});

/**
 * The server secret subject ids are made with: 32 random bytes made on first use and kept here, sealed under
 * REGISTRY_ENCRYPTION_KEYS like every other secret of the registry (so there is no setting to lose, and a
 * copy of the database alone does not turn subject ids back into numbers).
 */
export async function loadSubjectSecret(db: Knex, keyring: Keyring): Promise<Buffer> {
  await db('person_subject_secret')
    .insert({ id: 1, secret: seal(keyring, randomBytes(32).toString('base64')) })
    .onConflict('id')
    .ignore();
  const row = (await db('person_subject_secret').where({ id: 1 }).first()) as { secret: SealedSecret };
  return Buffer.from(unseal(keyring, row.secret), 'base64');
}

export async function obtainPersonKey(
  db: Knex,
  keyring: Keyring,
  subjectSecret: Buffer,
  companyId: string,
  phone: string,
): Promise<PersonKey> {
  const subjectId = subjectIdOf(subjectSecret, companyId, phone);
  await db('person_keys')
    .insert({
      key_id: randomUUID(),
      company_id: companyId,
      subject_id: subjectId,
      key: seal(keyring, newPersonKeyMaterial().toString('base64')),
    })
    .onConflict(['company_id', 'subject_id'])
    .ignore();
  const row = (await db('person_keys')
    .where({ company_id: companyId, subject_id: subjectId })
    .first()) as PersonKeyRow;
  return toKey(keyring, row);
}

export async function getPersonKey(
  db: Knex,
  keyring: Keyring,
  companyId: string,
  keyId: string,
): Promise<PersonKey | 'erased'> {
  if (!/^[0-9a-f-]{36}$/i.test(keyId)) return 'erased';
  const row = (await db('person_keys').where({ key_id: keyId, company_id: companyId }).first()) as
    PersonKeyRow | undefined;
  return row ? toKey(keyring, row) : 'erased';
}

/** Destroys the person's keys: what they sealed can never be opened again. The number of keys destroyed. */
export async function destroyPersonKeys(trx: Knex, companyId: string, subjectId: string): Promise<number> {
  return trx('person_keys').where({ company_id: companyId, subject_id: subjectId }).delete();
}

/**
 * Re-encrypts every stored person key (and the subject secret) under the keyring's current key, so an old
 * encryption key can be dropped. For the registry's reseal command. The number of rows rewritten.
 */
export async function resealPersonKeys(db: Knex, keyring: Keyring): Promise<number> {
  let rewritten = 0;
  await db.transaction(async (trx) => {
    const secret = (await trx('person_subject_secret').where({ id: 1 }).forUpdate().first()) as
      { secret: SealedSecret } | undefined;
    if (secret && secret.secret.keyId !== keyring.currentId) {
      await trx('person_subject_secret')
        .where({ id: 1 })
        .update({ secret: seal(keyring, unseal(keyring, secret.secret)) });
      rewritten += 1;
    }
    const rows = await trx('person_keys')
      .whereRaw(`key->>'keyId' <> ?`, [keyring.currentId])
      .forUpdate()
      .select<{ key_id: string; key: SealedSecret }[]>('key_id', 'key');
    for (const row of rows) {
      await trx('person_keys')
        .where({ key_id: row.key_id })
        .update({ key: seal(keyring, unseal(keyring, row.key)) });
      rewritten += 1;
    }
  });
  return rewritten;
}

/** The registry's own PersonKeyPort: its database, the subject secret read once. */
export function databasePersonKeys(
  db: Knex,
  keyring: Keyring,
): PersonKeyPort & { subjectId: (companyId: string, phone: string) => Promise<string> } {
  let secret: Promise<Buffer> | undefined;
  const subjectSecret = () =>
    (secret ??= loadSubjectSecret(db, keyring).catch((error: unknown) => {
      secret = undefined;
      throw error;
    }));
  return {
    async obtain(companyId, phone) {
      return obtainPersonKey(db, keyring, await subjectSecret(), companyId, phone);
    },
    get: (companyId, keyId) => getPersonKey(db, keyring, companyId, keyId),
    async subjectId(companyId, phone) {
      return subjectIdOf(await subjectSecret(), companyId, phone);
    },
  };
}
