import { deadLettersMigration, type Migration } from '@mds/db';
import {
  eventStatesFallbackMigration,
  eventStatesMetadataMigration,
  eventStatesMigration,
} from '@mds/message-state/store';

export const SCHEMA = 'gateway';

export const migrations: Migration[] = [
  {
    name: '0001_idempotency_keys',
    up: (db) =>
      db.schema.createTable('idempotency_keys', (t) => {
        t.text('api_key_id').notNullable();
        t.text('idempotency_key').notNullable();
        t.text('fingerprint').notNullable();
        t.uuid('event_id').notNullable();
        // pending: being handled (locked until locked_until); done: response stored; unknown: Kafka may have it.
        t.text('state').notNullable();
        t.smallint('status_code');
        t.jsonb('response');
        t.timestamp('locked_until', { useTz: true }).notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable();
        t.primary(['api_key_id', 'idempotency_key']);
        t.index(['created_at']);
      }),
    down: (db) => db.schema.dropTable('idempotency_keys'),
  },
  {
    name: '0002_rate_buckets',
    up: (db) =>
      db.schema.createTable('rate_buckets', (t) => {
        t.text('bucket').primary();
        t.double('tokens').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable();
      }),
    down: (db) => db.schema.dropTable('rate_buckets'),
  },
  // The read model of GET /api/v1/events/{event_id}: the fold of each message's or request's events.
  eventStatesMigration,
  {
    // Leases of many buckets by one upsert: it needs each bucket's rate and size beside its tokens, and
    // returns what it granted.
    name: '0004_rate_bucket_leases',
    up: (db) =>
      db.schema.alterTable('rate_buckets', (t) => {
        t.double('granted').notNullable().defaultTo(0);
        t.double('rate');
        t.double('capacity');
      }),
    down: (db) =>
      db.schema.alterTable('rate_buckets', (t) => {
        t.dropColumns('granted', 'rate', 'capacity');
      }),
  },
  deadLettersMigration,
  {
    // Each holder of a claim has its token: only it may complete or release the claim, so a holder whose
    // claim lapsed and was taken over cannot undo the new holder's.
    name: '0005_idempotency_claim_token',
    up: (db) =>
      db.schema.alterTable('idempotency_keys', (t) => {
        t.uuid('claim_token');
      }),
    down: (db) =>
      db.schema.alterTable('idempotency_keys', (t) => {
        t.dropColumn('claim_token');
      }),
  },
  {
    // Retention removes states by their last change.
    name: '0006_event_states_updated_at',
    up: (db) => db.raw('create index if not exists event_states_updated_at on event_states (updated_at)'),
    down: (db) => db.raw('drop index if exists event_states_updated_at'),
  },
  eventStatesMetadataMigration,
  eventStatesFallbackMigration,
];
