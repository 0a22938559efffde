import { topics, type AccountEvent, type ClientEvent, type Complete } from '@mds/contracts';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { readToEnd, type ConsumedEvent, type Kafka } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { evolveAccount, type AccountState } from '../domain/accounts.js';
import { saveAccount } from '../adapters/db/accounts-store.js';
import { applyClientEvent } from '../adapters/db/links-store.js';
import { migrations } from '../adapters/db/migrations.js';

/** The tables that make up the registry's state (the outbox and dedupe marks are bookkeeping). */
export const STATE_TABLES = {
  accounts: ['company_id'],
  api_keys: ['key_id'],
  bots: ['bot_id'],
  client_links: ['company_id', 'bot_id', 'chat_id'],
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
}): Promise<{ events: number }> {
  const db = await openDatabase({
    url: o.databaseUrl,
    schema: o.schema,
    applicationName: 'client-registry-rebuild',
  });
  try {
    await migrateUp(db, o.schema, migrations);
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
            clientEvents.map((e) => e.record),
          );
      },
    });
    await db.transaction(async (trx) => {
      for (const { state, at } of accounts.values()) await saveAccount(trx, state, at);
    });
    return result;
  } finally {
    await db.destroy();
  }
}

async function applyClientEvents(db: Knex, records: Complete<ClientEvent>[]): Promise<void> {
  await db.transaction(async (trx) => {
    for (const r of records)
      await applyClientEvent(trx, r.metadata.companyId, r.event, r.metadata.occurredAt!.toISOString());
  });
}
