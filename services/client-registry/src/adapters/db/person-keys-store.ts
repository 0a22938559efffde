import { randomBytes, randomUUID } from 'node:crypto';
import type { Knex } from '@mds/db';
import { newPersonKeyMaterial, subjectIdOf, type PersonKey, type PersonKeyPort } from '@mds/personal-data';
import type { SealedSecret } from '../../domain/accounts.js';
import {
  needsReseal,
  ownerOf,
  reseal,
  seal,
  SEALED_WITH_OWNER,
  unseal,
  type Keyring,
} from '../../application/secrets.js';

interface PersonKeyRow {
  key_id: string;
  company_id: string;
  subject_id: string;
  key: SealedSecret;
}

/**
 * What a person key is sealed to: its company, subject and key id. A sealed key copied onto another row
 * (by a database write, a restore mix-up) fails to open there instead of opening another person's data.
 */
const personKeyOwner = (row: Pick<PersonKeyRow, 'company_id' | 'subject_id' | 'key_id'>) =>
  ownerOf('person-key', row.company_id, row.subject_id, row.key_id);
const SUBJECT_SECRET_OWNER = ownerOf('person-subject-secret');

const toKey = (keyring: Keyring, row: PersonKeyRow): PersonKey => ({
  subjectId: row.subject_id,
  keyId: row.key_id,
  key: Buffer.from(unseal(keyring, row.key, personKeyOwner(row)), 'base64'),
});

/**
 * The server secret subject ids are made with: 32 random bytes made on first use and kept here, sealed under
 * REGISTRY_ENCRYPTION_KEYS like every other secret of the registry (so there is no setting to lose, and a
 * copy of the database alone does not turn subject ids back into numbers).
 */
export async function loadSubjectSecret(db: Knex, keyring: Keyring): Promise<Buffer> {
  await db('person_subject_secret')
    .insert({ id: 1, secret: seal(keyring, randomBytes(32).toString('base64'), SUBJECT_SECRET_OWNER) })
    .onConflict('id')
    .ignore();
  const row = (await db('person_subject_secret').where({ id: 1 }).first()) as { secret: SealedSecret };
  return Buffer.from(unseal(keyring, row.secret, SUBJECT_SECRET_OWNER), 'base64');
}

export async function obtainPersonKey(
  db: Knex,
  keyring: Keyring,
  subjectSecret: Buffer,
  companyId: string,
  phone: string,
): Promise<PersonKey> {
  const subjectId = subjectIdOf(subjectSecret, companyId, phone);
  const owner = { key_id: randomUUID(), company_id: companyId, subject_id: subjectId };
  await db('person_keys')
    .insert({
      ...owner,
      key: seal(keyring, newPersonKeyMaterial().toString('base64'), personKeyOwner(owner)),
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
 * Re-encrypts every stored person key (and the subject secret) that is not yet under the keyring's current
 * key and bound to its owner, so an old encryption key can be dropped and keys sealed before they were
 * bound get bound. For the registry's reseal command. The number of rows rewritten.
 */
export async function resealPersonKeys(db: Knex, keyring: Keyring): Promise<number> {
  let rewritten = 0;
  await db.transaction(async (trx) => {
    const secret = (await trx('person_subject_secret').where({ id: 1 }).forUpdate().first()) as
      { secret: SealedSecret } | undefined;
    if (secret && needsReseal(keyring, secret.secret)) {
      await trx('person_subject_secret')
        .where({ id: 1 })
        .update({ secret: reseal(keyring, secret.secret, SUBJECT_SECRET_OWNER) });
      rewritten += 1;
    }
    const rows = await trx('person_keys')
      .whereRaw(`key->>'keyId' <> ? or coalesce(key->>'format', '0') <> ?`, [
        keyring.currentId,
        String(SEALED_WITH_OWNER),
      ])
      .forUpdate()
      .select<PersonKeyRow[]>('key_id', 'company_id', 'subject_id', 'key');
    for (const row of rows) {
      await trx('person_keys')
        .where({ key_id: row.key_id })
        .update({ key: reseal(keyring, row.key, personKeyOwner(row)) });
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
