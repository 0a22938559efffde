import { topics, type AccountEvent, type ClientEvent, type Complete } from '@mds/contracts';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { readToEnd, type ConsumedEvent, type Kafka } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { evolveAccount, type AccountState } from './domain/accounts.js';
import { saveAccount } from './adapters/db/accounts-store.js';
import { applyClientEvent } from './adapters/db/links-store.js';
import { databasePersonKeys } from './adapters/db/person-keys-store.js';
import { parseKeyring } from './application/secrets.js';
import { openRecords } from '@mds/personal-data';
import { recordPhoneMoves } from './adapters/db/moves-store.js';
import { migrations } from './adapters/db/migrations.js';

/** The tables that make up the registry's state (the outbox and dedupe marks are bookkeeping). */
export const STATE_TABLES = {
  accounts: ['company_id'],
  api_keys: ['key_id'],
  bots: ['bot_id'],
  client_links: ['company_id', 'bot_id', 'chat_id'],
  person_moves: ['company_id', 'from_subject_id', 'to_subject_id'],
} as const;

/**
 * Rebuilds the registry's state from its events into a fresh schema, with the same folds the live service
 * uses: account events through evolveAccount into documents, client events through applyClientEvent.
 */
export async function rebuildRegistry(o: {
  kafka: Kafka;
  logger: Logger;
  topicPrefix?: string;
  databaseUrl: string;
  schema: string;
  /** REGISTRY_ENCRYPTION_KEYS, which seal the person keys that open the sealed numbers. */
  encryptionKeys: string;
  /**
   * The schema holding the person keys (the live registry's): keys are no fact of the log and are never
   * rebuilt; a person forgotten has none, so their links are not restored.
   */
  personKeysSchema: string;
}): Promise<{ events: number }> {
  const db = await openDatabase({
    url: o.databaseUrl,
    schema: o.schema,
    applicationName: 'client-registry-rebuild',
  });
  let keysDb: Knex = db;
  try {
    await migrateUp(db, o.schema, migrations);
    if (o.personKeysSchema !== o.schema)
      keysDb = await openDatabase({
        url: o.databaseUrl,
        schema: o.personKeysSchema,
        applicationName: 'client-registry-rebuild',
      });
    const keys = databasePersonKeys(keysDb, parseKeyring(o.encryptionKeys));
    const accounts = new Map<string, { state: AccountState; at: string }>();
    const result = await readToEnd<AccountEvent | ClientEvent>({
      kafka: o.kafka,
      logger: o.logger,
      topics: [topics.account, topics.client] as never,
      topicPrefix: o.topicPrefix,
      handleBatch: async (events) => {
        const clientEvents: ConsumedEvent<ClientEvent>[] = [];
        for (const e of events) {
          if (e.spec.name === topics.account.name) {
            const { record } = e as ConsumedEvent<AccountEvent>;
            const companyId = record.metadata.streamId;
            const at = record.metadata.occurredAt!.toISOString();
            const state = evolveAccount(accounts.get(companyId)?.state, companyId, {
              at,
              event: record.event,
            });
            accounts.set(companyId, { state, at });
          } else {
            clientEvents.push(e as ConsumedEvent<ClientEvent>);
          }
        }
        if (clientEvents.length > 0)
          await applyClientEvents(
            db,
            await openRecords(
              keys,
              clientEvents.map((e) => e.record),
            ),
            keys.subjectId,
          );
      },
    });
    await db.transaction(async (trx) => {
      for (const { state, at } of accounts.values()) await saveAccount(trx, state, at);
    });
    return result;
  } finally {
    if (keysDb !== db) await keysDb.destroy();
    await db.destroy();
  }
}

async function applyClientEvents(
  db: Knex,
  records: Complete<ClientEvent>[],
  subjectIdOf: (companyId: string, phone: string) => Promise<string>,
): Promise<void> {
  await db.transaction(async (trx) => {
    for (const r of records) {
      const at = r.metadata.occurredAt!.toISOString();
      await applyClientEvent(trx, r.metadata.companyId, r.event, at);
      await recordPhoneMoves(trx, subjectIdOf, r.metadata.companyId, [r.event], at);
    }
  });
}
