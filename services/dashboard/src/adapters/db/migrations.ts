import { subjectIndexMigration } from '@mds/personal-data';
import { LEGACY_WEBHOOK_ENDPOINT_ID } from '@mds/contracts';
import { deadLettersMigration, type Migration } from '@mds/db';

export const SCHEMA = 'dashboard';

/**
 * The dashboard's own data (members, sessions, one-time links, sign-in throttling, who did what) and the
 * read models it folds from the log (messages, timelines, webhook deliveries, key usage, bot activity,
 * per-minute counts). The read models can be dropped and rebuilt from the log; the rest is the dashboard's.
 */
export const migrations: Migration[] = [
  // What its consumer groups cannot handle is set aside here (the other services list it alike).
  deadLettersMigration,
  {
    name: '0001_members',
    up: async (db) => {
      await db.schema.createTable('members', (t) => {
        t.uuid('member_id').primary();
        t.uuid('company_id').notNullable().index();
        // Lower-cased; one person signs in to one company.
        t.text('email').notNullable().unique();
        t.text('name').notNullable().defaultTo('');
        t.text('role').notNullable();
        // scrypt$N$r$p$salt$hash; null until the member has set a password through their link.
        t.text('password_hash');
        t.integer('failed_sign_ins').notNullable().defaultTo(0);
        t.timestamp('locked_until', { useTz: true });
        t.uuid('invited_by');
        t.timestamp('created_at', { useTz: true }).notNullable();
        t.timestamp('last_sign_in_at', { useTz: true });
      });
      await db.schema.createTable('sessions', (t) => {
        // SHA-256 of the cookie's value: a stolen table opens no session.
        t.text('session_hash').primary();
        t.uuid('member_id')
          .notNullable()
          .index()
          .references('member_id')
          .inTable('members')
          .onDelete('CASCADE');
        t.text('csrf_token').notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable();
        t.timestamp('last_seen_at', { useTz: true }).notNullable();
        t.timestamp('expires_at', { useTz: true }).notNullable();
      });
      await db.schema.createTable('one_time_links', (t) => {
        t.text('token_hash').primary();
        t.uuid('member_id')
          .notNullable()
          .index()
          .references('member_id')
          .inTable('members')
          .onDelete('CASCADE');
        // invite (first password) or reset.
        t.text('purpose').notNullable();
        t.timestamp('created_at', { useTz: true }).notNullable();
        t.timestamp('expires_at', { useTz: true }).notNullable();
        t.timestamp('used_at', { useTz: true });
      });
      // One row per sign-in attempt: the limit per address counts the last minute's (a sliding window).
      await db.schema.createTable('sign_in_attempts', (t) => {
        t.bigIncrements('id');
        t.text('address').notNullable();
        t.timestamp('at', { useTz: true }).notNullable();
        t.index(['address', 'at']);
      });
      // What members did through the dashboard (a key's creator is the member who made it here).
      await db.schema.createTable('audit_log', (t) => {
        t.bigIncrements('id');
        t.uuid('company_id').notNullable();
        t.uuid('member_id');
        t.text('action').notNullable();
        t.text('target').notNullable().defaultTo('');
        t.jsonb('detail');
        t.timestamp('at', { useTz: true }).notNullable();
        t.index(['company_id', 'action', 'target']);
      });
    },
    down: async (db) => {
      for (const table of ['audit_log', 'sign_in_attempts', 'one_time_links', 'sessions', 'members'])
        await db.schema.dropTable(table);
    },
  },
  {
    name: '0002_read_models',
    up: async (db) => {
      // One row per message: the fold of its events (mds.message.v1, and where it was routed).
      await db.schema.createTable('messages', (t) => {
        t.uuid('message_id').primary();
        t.uuid('company_id').notNullable();
        t.text('state').notNullable();
        t.text('messenger');
        t.text('bot_name');
        t.text('bot_id');
        t.text('chat_id');
        t.text('phone');
        t.text('api_key_id');
        t.text('error_code');
        t.integer('attempts');
        t.timestamp('accepted_at', { useTz: true });
        t.timestamp('routed_at', { useTz: true });
        t.timestamp('finished_at', { useTz: true });
        // accepted_at, or the first event's time when the acceptance is not in the log (trimmed history).
        t.timestamp('sort_at', { useTz: true }).notNullable();
        t.integer('webhook_attempts').notNullable().defaultTo(0);
        t.text('webhook_status');
      });
      // Newest first, per company, with the filters of the messages page: each an index that serves the
      // filter and the order at once, so a page reads only its rows.
      const ordered = 'sort_at desc, message_id desc';
      await db.raw(`create index messages_by_time on messages (company_id, ${ordered})`);
      for (const column of ['state', 'messenger', 'bot_id', 'phone'])
        await db.raw(`create index messages_by_${column} on messages (company_id, ${column}, ${ordered})`);
      await db.raw(
        `create index messages_by_error_code on messages (company_id, error_code, ${ordered}) where error_code is not null`,
      );

      // Every event of a message or request, in the log's order of occurrence: its timeline.
      await db.schema.createTable('timeline', (t) => {
        t.uuid('event_id').primary();
        t.text('subject_id').notNullable();
        t.uuid('company_id').notNullable();
        t.text('type').notNullable();
        t.timestamp('at', { useTz: true }).notNullable();
        t.text('producer').notNullable();
        t.jsonb('data').notNullable();
        // Insertion order: events of one subject from one partition arrive in the log's order, which breaks
        // ties between events of the same millisecond (an attempt and its "delivered").
        t.specificType('seq', 'bigserial');
        t.index(['subject_id', 'at']);
      });

      // One row per webhook notification (webhook-id): its latest known state, from mds.webhook.v1.
      await db.schema.createTable('webhook_deliveries', (t) => {
        t.text('webhook_id').primary();
        t.uuid('company_id').notNullable();
        t.text('subject_id').notNullable();
        t.text('kind').notNullable();
        // pending (will be tried again), delivered, failed (gave up or the endpoint is gone).
        t.text('status').notNullable();
        t.integer('attempts').notNullable();
        t.integer('last_status_code');
        t.text('last_error');
        t.text('url');
        t.timestamp('last_attempt_at', { useTz: true }).notNullable();
        t.timestamp('next_attempt_at', { useTz: true });
      });
      await db.raw('create index webhook_deliveries_by_subject on webhook_deliveries (subject_id)');
      await db.raw(
        'create index webhook_deliveries_by_status on webhook_deliveries (company_id, status, last_attempt_at desc, webhook_id desc)',
      );

      await db.schema.createTable('api_key_usage', (t) => {
        t.text('key_id').primary();
        t.uuid('company_id').notNullable();
        t.timestamp('last_used_at', { useTz: true }).notNullable();
      });
      await db.schema.createTable('bot_activity', (t) => {
        t.text('bot_id').primary();
        t.uuid('company_id').notNullable();
        t.timestamp('last_update_at', { useTz: true }).notNullable();
        t.text('last_update_type').notNullable();
      });

      // Outcomes per minute, messenger, bot, error code and latency bucket (see domain/latency.ts): the
      // overview's charts and percentiles are sums over these small rows.
      await db.schema.createTable('outcome_minutes', (t) => {
        t.uuid('company_id').notNullable();
        t.timestamp('minute', { useTz: true }).notNullable();
        t.text('messenger').notNullable();
        t.text('bot_id').notNullable();
        t.text('state').notNullable();
        t.text('error_code').notNullable();
        // -1 when the acceptance is not in the log.
        t.smallint('latency_bucket').notNullable();
        t.integer('count').notNullable();
        t.primary(['company_id', 'minute', 'messenger', 'bot_id', 'state', 'error_code', 'latency_bucket']);
      });
      await db.schema.createTable('webhook_minutes', (t) => {
        t.uuid('company_id').notNullable();
        t.timestamp('minute', { useTz: true }).notNullable();
        t.text('outcome').notNullable();
        t.integer('count').notNullable();
        t.primary(['company_id', 'minute', 'outcome']);
      });
    },
    down: async (db) => {
      for (const table of [
        'webhook_minutes',
        'outcome_minutes',
        'bot_activity',
        'api_key_usage',
        'webhook_deliveries',
        'timeline',
        'messages',
      ])
        await db.schema.dropTable(table);
    },
  },
  // Which rows hold a person's number or texts, for ClientForgotten (docs/personal-data.md).
  subjectIndexMigration('0003_personal_data_subjects'),
  {
    // Retention removes rows by their age: an index on each table's time column.
    name: '0004_retention_indexes',
    up: async (db) => {
      await db.raw('create index messages_sort_at on messages (sort_at)');
      await db.raw('create index timeline_at on timeline (at)');
      await db.raw('create index webhook_deliveries_last_attempt_at on webhook_deliveries (last_attempt_at)');
      await db.raw('create index outcome_minutes_minute on outcome_minutes (minute)');
      await db.raw('create index webhook_minutes_minute on webhook_minutes (minute)');
    },
    down: async (db) => {
      for (const index of [
        'webhook_minutes_minute',
        'outcome_minutes_minute',
        'webhook_deliveries_last_attempt_at',
        'timeline_at',
        'messages_sort_at',
      ])
        await db.raw(`drop index ${index}`);
    },
  },
  {
    // Sign-in throttling per email (known or not, so the answer tells no one which emails are members): failures
    // in a row and when the next attempt may come. Replaces the members' lockout columns (left unused).
    name: '0005_sign_in_throttle',
    up: async (db) => {
      await db.schema.createTable('sign_in_throttle', (t) => {
        t.text('key').primary();
        t.integer('failures').notNullable();
        t.timestamp('next_attempt_at', { useTz: true }).notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable().index();
      });
    },
    down: (db) => db.schema.dropTable('sign_in_throttle'),
  },
  {
    // How far behind the read models are, per partition, as each replica's consumer reports it: the banner of
    // every page reads the whole group's lag here, whichever replica serves the page.
    name: '0006_read_model_lag',
    up: async (db) => {
      await db.schema.createTable('read_model_lag', (t) => {
        t.text('topic').notNullable();
        t.integer('kafka_partition').notNullable();
        t.bigInteger('records_behind').notNullable();
        t.timestamp('oldest_pending_at', { useTz: true });
        t.text('reported_by').notNullable();
        t.timestamp('reported_at', { useTz: true }).notNullable();
        t.primary(['topic', 'kafka_partition']);
      });
    },
    down: async (db) => {
      await db.schema.dropTable('read_model_lag');
    },
  },
  {
    // The audit log ages too (RETENTION_AUDIT_LOG_DAYS), by when each action was taken.
    name: '0007_audit_log_retention',
    up: (db) => db.raw('create index audit_log_at on audit_log (at)'),
    down: (db) => db.raw('drop index audit_log_at'),
  },
  {
    // A company has several webhook endpoints: deliveries and attempt counts are kept per endpoint. Everything
    // folded before endpoints had ids was about the single URL of older versions, the endpoint "ep_default".
    name: '0008_webhook_endpoints',
    up: async (db) => {
      const endpointColumn = `endpoint_id text not null default '${LEGACY_WEBHOOK_ENDPOINT_ID}'`;
      await db.raw(`alter table webhook_deliveries add column ${endpointColumn}`);
      await db.raw(
        `create index webhook_deliveries_by_endpoint on webhook_deliveries
           (company_id, endpoint_id, status, last_attempt_at desc, webhook_id desc)`,
      );
      await db.raw(`alter table webhook_minutes add column ${endpointColumn}`);
      await db.raw('alter table webhook_minutes drop constraint webhook_minutes_pkey');
      await db.raw('alter table webhook_minutes add primary key (company_id, minute, endpoint_id, outcome)');
      // Each endpoint's latest failed attempt (the endpoints page's "last failure"), kept apart from the
      // deliveries: a delivery that failed and then succeeded no longer shows its failure.
      await db.schema.createTable('webhook_endpoint_failures', (t) => {
        t.uuid('company_id').notNullable();
        t.text('endpoint_id').notNullable();
        t.timestamp('at', { useTz: true }).notNullable();
        t.text('outcome').notNullable();
        t.integer('status_code');
        t.text('error');
        t.primary(['company_id', 'endpoint_id']);
      });
    },
    down: async (db) => {
      await db.schema.dropTable('webhook_endpoint_failures');
      // Every endpoint's counts summed back into the company's.
      await db.raw(
        `create temporary table webhook_minutes_summed as
           select company_id, minute, outcome, sum(count)::int as count from webhook_minutes group by 1, 2, 3`,
      );
      await db.raw('delete from webhook_minutes');
      await db.raw('alter table webhook_minutes drop constraint webhook_minutes_pkey');
      await db.raw('alter table webhook_minutes drop column endpoint_id');
      await db.raw('alter table webhook_minutes add primary key (company_id, minute, outcome)');
      await db.raw(
        'insert into webhook_minutes (company_id, minute, outcome, count) select * from webhook_minutes_summed',
      );
      await db.raw('drop table webhook_minutes_summed');
      await db.raw('drop index webhook_deliveries_by_endpoint');
      await db.raw('alter table webhook_deliveries drop column endpoint_id');
    },
  },
  {
    // The deliveries page opens on every status: newest first over all of a company's deliveries.
    name: '0009_layout_deliveries_by_company',
    up: (db) =>
      db.raw(
        'create index webhook_deliveries_by_company on webhook_deliveries (company_id, last_attempt_at desc, webhook_id desc)',
      ),
    down: (db) => db.raw('drop index webhook_deliveries_by_company'),
  },
  {
    // The per-key API request log (mds.api-requests.v1), newest first per key; kept API_REQUEST_LOG_DAYS like
    // its topic. A read model: dropped and rebuilt from the log like the others.
    name: '0010_keys_api_requests',
    up: async (db) => {
      await db.schema.createTable('api_requests', (t) => {
        t.uuid('record_id').primary();
        t.uuid('company_id').notNullable();
        t.text('key_id').notNullable();
        t.timestamp('at', { useTz: true }).notNullable();
        t.text('operation').notNullable();
        t.smallint('status').notNullable();
        t.text('event_id').notNullable();
        t.text('request_id').notNullable();
        t.integer('duration_ms').notNullable();
      });
      await db.raw(
        'create index api_requests_by_key on api_requests (company_id, key_id, at desc, record_id desc)',
      );
      await db.raw('create index api_requests_by_at on api_requests (at)');
    },
    down: (db) => db.schema.dropTable('api_requests'),
  },
  {
    // The audit page (issue 34, part "session"): a company's trail, newest first, paged by id.
    name: '0011_session_audit_by_company',
    up: (db) => db.raw('create index audit_log_by_company on audit_log (company_id, id desc)'),
    down: (db) => db.raw('drop index audit_log_by_company'),
  },
  {
    // The message log shows each message's text and searches it: the text on the message's row (as opened when
    // folded, null when sealed and not opened, blanked when the person is forgotten), filled in here from the
    // timelines' acceptances for the messages folded before.
    name: '0012_log_message_text',
    up: async (db) => {
      await db.raw('alter table messages add column text text');
      await db.raw(
        `update messages m set text = nullif(t.data ->> 'text', '')
         from timeline t
         where t.subject_id = m.message_id::text and t.type = 'MessageAccepted'`,
      );
    },
    down: (db) => db.raw('alter table messages drop column text'),
  },
];
