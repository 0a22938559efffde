import { LEGACY_WEBHOOK_ENDPOINT_ID } from '@mds/contracts';
import { deadLettersMigration, type Migration } from '@mds/db';
import { outboxColumns } from '@mds/outbox';
import { subjectIndexMigration } from '@mds/personal-data';

export const SCHEMA = 'webhook_dispatcher';

export const migrations: Migration[] = [
  {
    name: '0001_deliveries',
    up: async (db) => {
      // One row per notification: its body (the exact bytes signed and sent on every attempt) and its schedule.
      await db.schema.createTable('deliveries', (t) => {
        t.text('webhook_id').primary();
        // The outcome event it notifies: storing it twice is impossible, so a replayed event is dropped.
        t.uuid('source_event_id').notNullable().unique();
        t.text('company_id').notNullable();
        t.text('kind').notNullable();
        t.text('subject_id').notNullable().index();
        t.text('body').notNullable();
        // pending (to be tried at next_attempt_at), delivered, failed (given up; resend or recover).
        t.text('status').notNullable();
        t.integer('attempts').notNullable().defaultTo(0);
        t.timestamp('next_attempt_at', { useTz: true });
        // A resend or recover: tried once, not rescheduled.
        t.boolean('manual').notNullable().defaultTo(false);
        // Which worker holds the row and until when (database time): another replica takes it only after.
        t.uuid('lease_id');
        t.timestamp('lease_until', { useTz: true });
        t.integer('last_status_code');
        t.text('last_error');
        t.timestamp('created_at', { useTz: true }).notNullable();
        t.timestamp('finished_at', { useTz: true });
        t.index(['company_id', 'created_at']);
      });
      await db.raw("create index deliveries_due on deliveries (next_attempt_at) where status = 'pending'");
      await db.schema.createTable('attempts', (t) => {
        t.bigIncrements('id');
        t.text('webhook_id').notNullable().index();
        t.integer('attempt').notNullable();
        t.text('trigger').notNullable();
        t.text('url').notNullable();
        t.integer('status_code').notNullable();
        t.integer('latency_ms').notNullable();
        t.text('outcome').notNullable();
        t.text('error');
        t.text('response_excerpt').notNullable();
        t.timestamp('next_attempt_at', { useTz: true });
        t.timestamp('attempted_at', { useTz: true }).notNullable();
      });
      // Per company: since when every attempt has failed (cleared by any success), for auto-disable.
      await db.schema.createTable('endpoint_health', (t) => {
        t.text('company_id').primary();
        t.timestamp('failing_since', { useTz: true });
        t.timestamp('updated_at', { useTz: true }).notNullable();
      });
      await db.schema.createTable('outbox', outboxColumns);
    },
    down: async (db) => {
      for (const table of ['outbox', 'endpoint_health', 'attempts', 'deliveries'])
        await db.schema.dropTable(table);
    },
  },
  {
    // Each delivery keeps its attempt log in its own row: one row written when the notification arrives and
    // updated once per attempt, instead of a row per attempt as well. The log's entries keep the attempts
    // table's column names, which the admin API shows as they are.
    name: '0002_attempt_log_in_row',
    up: async (db) => {
      await db.schema.alterTable('deliveries', (t) => {
        t.jsonb('attempt_log').notNullable().defaultTo(db.raw(`'[]'::jsonb`));
      });
      await db.raw(
        `update deliveries d set attempt_log = a.log
         from (select webhook_id, jsonb_agg(jsonb_build_object(
                 'attempt', attempt, 'trigger', trigger, 'url', url, 'status_code', status_code,
                 'latency_ms', latency_ms, 'outcome', outcome, 'error', error,
                 'response_excerpt', response_excerpt,
                 'next_attempt_at', to_char(next_attempt_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                 'attempted_at', to_char(attempted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                 order by id) as log
               from attempts group by webhook_id) a
         where a.webhook_id = d.webhook_id`,
      );
      await db.schema.dropTable('attempts');
    },
    down: async (db) => {
      await db.schema.createTable('attempts', (t) => {
        t.bigIncrements('id');
        t.text('webhook_id').notNullable().index();
        t.integer('attempt').notNullable();
        t.text('trigger').notNullable();
        t.text('url').notNullable();
        t.integer('status_code').notNullable();
        t.integer('latency_ms').notNullable();
        t.text('outcome').notNullable();
        t.text('error');
        t.text('response_excerpt').notNullable();
        t.timestamp('next_attempt_at', { useTz: true });
        t.timestamp('attempted_at', { useTz: true }).notNullable();
      });
      await db.raw(
        `insert into attempts (webhook_id, attempt, trigger, url, status_code, latency_ms, outcome, error,
           response_excerpt, next_attempt_at, attempted_at)
         select d.webhook_id, (e->>'attempt')::int, e->>'trigger', e->>'url', (e->>'status_code')::int,
           (e->>'latency_ms')::int, e->>'outcome', e->>'error', e->>'response_excerpt',
           (e->>'next_attempt_at')::timestamptz, (e->>'attempted_at')::timestamptz
         from deliveries d, jsonb_array_elements(d.attempt_log) e`,
      );
      await db.schema.alterTable('deliveries', (t) => t.dropColumn('attempt_log'));
    },
  },
  deadLettersMigration,
  {
    // The trace context of the event a delivery came from (W3C traceparent and tracestate), so its
    // attempts, however much later a claim takes them, continue the message's trace. Null when untraced.
    name: '0003_trace_context',
    up: async (db) => {
      await db.schema.alterTable('deliveries', (t) => {
        t.text('traceparent');
        t.text('tracestate');
      });
    },
    down: async (db) => {
      await db.schema.alterTable('deliveries', (t) => {
        t.dropColumn('traceparent');
        t.dropColumn('tracestate');
      });
    },
  },
  // Which notifications carry a person's number, for ClientForgotten (docs/personal-data.md).
  subjectIndexMigration('0004_personal_data_subjects'),
  {
    // Retention removes finished notifications by when they finished.
    name: '0005_deliveries_finished_at',
    up: (db) =>
      db.raw('create index deliveries_finished on deliveries (finished_at) where finished_at is not null'),
    down: (db) => db.raw('drop index deliveries_finished'),
  },
  {
    // Deliveries per endpoint: one row per (notification, endpoint), and a failure clock per endpoint. Rows and
    // clocks from before endpoints had ids are the company's single URL's, which is now "ep_default". The
    // new unique index exists before the old constraint goes, so a replayed event is never stored twice.
    name: '0006_deliveries_per_endpoint',
    up: async (db) => {
      await db.schema.alterTable('deliveries', (t) => {
        t.text('endpoint_id').notNullable().defaultTo(LEGACY_WEBHOOK_ENDPOINT_ID);
      });
      await db.raw(
        'create unique index deliveries_source_endpoint on deliveries (source_event_id, endpoint_id)',
      );
      await db.raw('alter table deliveries drop constraint deliveries_source_event_id_unique');
      await db.schema.alterTable('endpoint_health', (t) => {
        t.text('endpoint_id').notNullable().defaultTo(LEGACY_WEBHOOK_ENDPOINT_ID);
      });
      await db.raw('alter table endpoint_health drop constraint endpoint_health_pkey');
      await db.raw('alter table endpoint_health add primary key (company_id, endpoint_id)');
    },
    down: async (db) => {
      // Only the single URL's rows fit the old shape.
      await db('deliveries').whereNot({ endpoint_id: LEGACY_WEBHOOK_ENDPOINT_ID }).delete();
      await db('endpoint_health').whereNot({ endpoint_id: LEGACY_WEBHOOK_ENDPOINT_ID }).delete();
      await db.raw('alter table endpoint_health drop constraint endpoint_health_pkey');
      await db.raw('alter table endpoint_health add primary key (company_id)');
      await db.schema.alterTable('endpoint_health', (t) => t.dropColumn('endpoint_id'));
      await db.raw(
        'alter table deliveries add constraint deliveries_source_event_id_unique unique (source_event_id)',
      );
      await db.raw('drop index deliveries_source_endpoint');
      await db.schema.alterTable('deliveries', (t) => t.dropColumn('endpoint_id'));
    },
  },
  {
    // The `metadata` of each request that carried some, kept from its request event until its outcome's
    // notifications echo it. Personal data: forget deletes a person's rows, retention ages them out.
    name: '0007_request_metadata',
    up: (db) =>
      db.schema.createTable('request_metadata', (t) => {
        t.uuid('request_id').primary();
        t.text('company_id').notNullable();
        t.jsonb('metadata').notNullable();
        t.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.index(['recorded_at']);
      }),
    down: (db) => db.schema.dropTable('request_metadata'),
  },
];
