import { deadLettersMigration, processedEventsMigration, type Migration } from '@mds/db';
import { LEGACY_API_KEY_SCOPES } from '@mds/contracts';
import { outboxColumns } from '@mds/outbox';
import type { AccountState } from '../../domain/accounts.js';
import { accountOf, documentOf } from './accounts-store.js';

export const SCHEMA = 'client_registry';

export const migrations: Migration[] = [
  processedEventsMigration,
  {
    name: '0001_accounts',
    up: async (db) => {
      // One document per company: the fold of its account events (see domain/accounts.ts).
      await db.schema.createTable('accounts', (t) => {
        t.uuid('company_id').primary();
        t.text('name').notNullable();
        t.jsonb('state').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable();
      });
      // Lookup tables derived from the documents, rewritten with them, for the gRPC questions.
      await db.schema.createTable('api_keys', (t) => {
        t.text('key_id').primary();
        t.uuid('company_id').notNullable().index();
        t.text('key_hash').notNullable();
        t.boolean('revoked').notNullable();
      });
      await db.schema.createTable('bots', (t) => {
        t.uuid('bot_id').primary();
        t.uuid('company_id').notNullable().index();
        t.text('messenger').notNullable();
        t.text('name').notNullable();
        t.text('provider_bot_id').notNullable();
        t.jsonb('token').notNullable();
        t.unique(['messenger', 'provider_bot_id']);
      });
    },
    down: async (db) => {
      await db.schema.dropTable('bots');
      await db.schema.dropTable('api_keys');
      await db.schema.dropTable('accounts');
    },
  },
  {
    name: '0002_client_links',
    up: async (db) => {
      await db.schema.createTable('client_links', (t) => {
        t.uuid('company_id').notNullable();
        t.uuid('bot_id').notNullable();
        t.text('chat_id').notNullable();
        t.text('user_id').notNullable();
        t.smallint('messenger').notNullable();
        t.text('phone').notNullable();
        t.boolean('reachable').notNullable();
        t.smallint('unreachable_reason').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable();
        t.primary(['company_id', 'bot_id', 'chat_id']);
        t.index(['company_id', 'phone']);
      });
    },
    down: (db) => db.schema.dropTable('client_links'),
  },
  {
    name: '0004_routed_messages',
    up: (db) =>
      // The routing decision of each message, so a message handled again (after a crash before the offset
      // commit) gets the same decision even if links changed in between.
      db.schema.createTable('routed_messages', (t) => {
        t.uuid('message_id').primary();
        t.text('topic').notNullable();
        t.text('key').notNullable();
        t.binary('payload').notNullable();
        t.timestamp('decided_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
      }),
    down: (db) => db.schema.dropTable('routed_messages'),
  },
  {
    name: '0003_outbox',
    up: (db) =>
      // Events decided in a transaction wait here until the relay has them in Kafka.
      db.schema.createTable('outbox', (t) => {
        outboxColumns(t);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
      }),
    down: (db) => db.schema.dropTable('outbox'),
  },
  deadLettersMigration,
  {
    // When the last fact that changed each link happened: an older fact coming late is ignored.
    name: '0005_client_link_fact_at',
    up: (db) =>
      db.schema.alterTable('client_links', (t) => {
        t.timestamp('fact_at', { useTz: true });
      }),
    down: (db) => db.schema.alterTable('client_links', (t) => t.dropColumn('fact_at')),
  },
  {
    // Routing remembers nothing any more: the senders' journals keep the first decision of each message.
    // A replica of the previous release still routing during a rolling deploy fails its batch and retries
    // it until it is replaced (nothing is committed, so nothing is lost).
    name: '0006_drop_routed_messages',
    up: (db) => db.schema.dropTableIfExists('routed_messages'),
    down: (db) =>
      db.schema.createTable('routed_messages', (t) => {
        t.uuid('message_id').primary();
        t.text('topic').notNullable();
        t.text('key').notNullable();
        t.binary('payload').notNullable();
        t.timestamp('decided_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
      }),
  },
  {
    // Keys carry scopes. Keys issued before have none recorded: they get every scope but change_phone (the
    // legacy default, LEGACY_API_KEY_SCOPES in @mds/contracts), so a leaked send key cannot re-point links; a
    // company that calls change_phone issues a key with that scope. The account documents are rewritten with
    // the same default as each company's next event is applied.
    name: '0007_api_key_scopes',
    up: (db) =>
      db.schema.alterTable('api_keys', (t) => {
        t.specificType('scopes', 'text[]')
          .notNullable()
          .defaultTo(db.raw(`'{${LEGACY_API_KEY_SCOPES.join(',')}}'::text[]`));
      }),
    down: (db) => db.schema.alterTable('api_keys', (t) => t.dropColumn('scopes')),
  },
  {
    // Crypto-shredding (docs/personal-data.md): one key per person (company and subject id), sealed under
    // REGISTRY_ENCRYPTION_KEYS; forgetting the person deletes it. The subject secret makes subject ids.
    name: '0008_person_keys',
    up: async (db) => {
      await db.schema.createTable('person_keys', (t) => {
        t.uuid('key_id').primary();
        t.uuid('company_id').notNullable();
        t.text('subject_id').notNullable();
        t.jsonb('key').notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.unique(['company_id', 'subject_id']);
      });
      await db.schema.createTable('person_subject_secret', (t) => {
        t.smallint('id').primary();
        t.jsonb('secret').notNullable();
      });
    },
    down: async (db) => {
      await db.schema.dropTable('person_subject_secret');
      await db.schema.dropTable('person_keys');
    },
  },
  {
    // Retention removes processed-event marks by age.
    name: '0009_processed_events_at',
    up: (db) => db.raw('create index processed_events_at on processed_events (processed_at)'),
    down: (db) => db.raw('drop index processed_events_at'),
  },
  {
    // Which numbers were one person's (adapters/db/moves-store.ts): change_phone's moves as subject ids, so
    // forgetting any number of a person forgets all of them. Moves accepted before this build are not here
    // until the registry is rebuilt from the log (their ClientPhoneChanged events still open).
    name: '0010_person_moves',
    up: async (db) => {
      await db.schema.createTable('person_moves', (t) => {
        t.uuid('company_id').notNullable();
        t.text('from_subject_id').notNullable();
        t.text('to_subject_id').notNullable();
        t.timestamp('moved_at', { useTz: true }).notNullable();
        t.primary(['company_id', 'from_subject_id', 'to_subject_id']);
        t.index(['company_id', 'to_subject_id']);
      });
    },
    down: (db) => db.schema.dropTable('person_moves'),
  },
  {
    // Webhook endpoints: a company's single webhook URL becomes its first endpoint, ep_default, with its secrets
    // and enabled state, as folding its events (which name no endpoint) gives it. Expand only: the single
    // `webhook` stays in the documents (and is written with ep_default), for replicas of the previous release
    // still running; down removes the endpoints (their events stay in the log).
    name: '0011_webhook_endpoints',
    up: async (db) => {
      const rows = await db('accounts')
        .whereRaw("not state \\? 'webhookEndpoints'")
        .select<{ company_id: string; state: AccountState }[]>('company_id', 'state');
      for (const row of rows)
        await db('accounts')
          .where({ company_id: row.company_id })
          .update({ state: JSON.stringify(documentOf(accountOf(row.state))) });
    },
    down: (db) => db.raw(`update accounts set state = state - 'webhookEndpoints'`),
  },
  {
    // Rolled keys: the old key works until its end (ApiKeyExpiryScheduled), which ResolveApiKey checks. Empty
    // for every key so far (none was rolled before this).
    name: '0012_keys_api_key_expiry',
    up: (db) =>
      db.schema.alterTable('api_keys', (t) => {
        t.timestamp('expires_at', { useTz: true }).nullable();
      }),
    down: (db) => db.schema.alterTable('api_keys', (t) => t.dropColumn('expires_at')),
  },
];
