import type { Knex } from '@mds/db';
import type { AccountState } from '../../domain/accounts.js';
import { legacyWebhookOf, upgradeLegacyWebhook } from '../../domain/legacy-webhook.js';
import type { AccountStore } from '../../application/ports.js';

/** Serialises decisions about one company across every replica until the transaction ends. */
export async function lockCompany(trx: Knex.Transaction, companyId: string): Promise<void> {
  await lockCompanies(trx, [companyId]);
}

/** Takes the companies' locks in one order, so that two transactions locking several never wait in a circle. */
export async function lockCompanies(trx: Knex.Transaction, companyIds: readonly string[]): Promise<void> {
  if (companyIds.length === 0) return;
  await trx.raw('select pg_advisory_xact_lock(hashtext(k)) from unnest(?::text[]) as k order by k', [
    [...new Set(companyIds)].sort().map((id) => `company:${id}`),
  ]);
}

/** The account a stored document holds (its single `webhook` of the previous release is ep_default). */
export const accountOf = (document: AccountState): AccountState => upgradeLegacyWebhook(document);

/**
 * The document stored for an account: with ep_default also as the single `webhook`, which a replica of the
 * previous release reads (a rolling deploy, a rollback) and which upgradeLegacyWebhook reads back. The next
 * release that no longer has to run beside one without endpoints stops writing it.
 */
export const documentOf = (state: AccountState) => {
  const webhook = legacyWebhookOf(state.webhookEndpoints);
  return { ...state, ...(webhook ? { webhook } : {}) };
};

export async function loadAccount(db: Knex, companyId: string): Promise<AccountState | undefined> {
  const row = await db('accounts')
    .where({ company_id: companyId })
    .first<{ state: AccountState } | undefined>('state');
  return row && accountOf(row.state);
}

export async function loadAccounts(
  db: Knex,
  companyIds: readonly string[],
): Promise<Map<string, AccountState>> {
  if (companyIds.length === 0) return new Map();
  const rows = await db('accounts')
    .whereIn('company_id', companyIds)
    .select<{ state: AccountState }[]>('state');
  return new Map(rows.map((r) => [r.state.companyId, accountOf(r.state)]));
}

export async function listAccounts(db: Knex): Promise<AccountState[]> {
  const rows = await db('accounts').orderBy('name').select<{ state: AccountState }[]>('state');
  return rows.map((r) => accountOf(r.state));
}

/** Writes the document and rewrites the lookup rows derived from it. */
export async function saveAccount(trx: Knex.Transaction, state: AccountState, at: string): Promise<void> {
  await trx('accounts')
    .insert({
      company_id: state.companyId,
      name: state.name,
      state: JSON.stringify(documentOf(state)),
      updated_at: at,
    })
    .onConflict('company_id')
    .merge();
  await trx('api_keys').where({ company_id: state.companyId }).delete();
  const keys = Object.values(state.apiKeys).map((k) => ({
    key_id: k.keyId,
    company_id: state.companyId,
    key_hash: k.keyHash,
    revoked: Boolean(k.revokedAt),
    expires_at: k.expiresAt ?? null,
    // As issued: every reader (the gateway's, the admin API's) takes the scopes its own build knows.
    scopes: k.scopes ?? [],
  }));
  if (keys.length) await trx('api_keys').insert(keys);
  await trx('bots').where({ company_id: state.companyId }).delete();
  const bots = Object.values(state.bots).map((b) => ({
    bot_id: b.botId,
    company_id: state.companyId,
    messenger: b.messenger,
    name: b.name,
    provider_bot_id: b.providerBotId,
    token: JSON.stringify(b.token),
  }));
  if (bots.length) await trx('bots').insert(bots);
}

export interface ApiKeyRow {
  company_id: string;
  key_hash: string;
  revoked: boolean;
  scopes: string[];
  /** Set for a rolled key still in its overlap, or past it. */
  expires_at: Date | null;
}

export async function findApiKey(db: Knex, keyId: string): Promise<ApiKeyRow | undefined> {
  return db('api_keys')
    .where({ key_id: keyId })
    .first<ApiKeyRow | undefined>('company_id', 'key_hash', 'revoked', 'scopes', 'expires_at');
}

/** Ids of keys that work (not revoked, not past their end) after `afterKeyId`, in ascending order, at most `limit`. */
export async function unrevokedKeyIds(db: Knex, afterKeyId: string, limit: number): Promise<string[]> {
  const rows = await db('api_keys')
    .where({ revoked: false })
    .andWhere((q) => q.whereNull('expires_at').orWhere('expires_at', '>', db.fn.now()))
    .andWhere('key_id', '>', afterKeyId)
    .orderBy('key_id')
    .limit(limit)
    .select<{ key_id: string }[]>('key_id');
  return rows.map((r) => r.key_id);
}

export async function companyOfBot(db: Knex, botId: string): Promise<string | undefined> {
  const row = await db('bots')
    .where({ bot_id: botId })
    .first<{ company_id: string } | undefined>('company_id');
  return row?.company_id;
}

export async function botOwner(
  db: Knex,
  messenger: string,
  providerBotId: string,
): Promise<string | undefined> {
  const row = await db('bots')
    .where({ messenger, provider_bot_id: providerBotId })
    .first<{ company_id: string } | undefined>('company_id');
  return row?.company_id;
}

/** The account store the application uses (application/ports.ts). */
export const accountStore: AccountStore = {
  lockCompany,
  lockCompanies,
  loadAccount,
  listAccounts,
  saveAccount,
  companyOfBot,
  botOwner,
};
