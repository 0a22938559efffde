import { deadLettersMigration, type Migration } from '@mds/db';

/**
 * The sender's journal of deliveries, in its own schema. A message gets its row when its first call is
 * claimed: the row is the claim ("a call may be in flight") and, once decided, the outcome, stored
 * (compare-and-set on the claim) before it is published. Until then the message lives in memory and its
 * Kafka offset stays uncommitted, so a crash brings it back from the log. Messages that must wait longer
 * (a bot's backlog beyond its window, a retry after a failure) are parked here (`spilled`): their offsets
 * move on, and their outcomes are marked published once Kafka has them.
 */
export const journalMigrations: Migration[] = [
  {
    name: '0001_deliveries',
    up: async (db) => {
      await db.schema.createTable('deliveries', (t) => {
        t.uuid('message_id').primary();
        t.bigIncrements('seq', { primaryKey: false });
        t.text('bot_id').notNullable();
        t.integer('kafka_partition').notNullable();
        // The DeliveryRequested record as it came (protobuf), to build the outcome from.
        t.binary('request').notNullable();
        t.timestamp('deliver_before', { useTz: true }).notNullable();
        // pending -> sending -> (pending | sent | failed)
        t.text('status').notNullable().defaultTo('pending');
        t.integer('attempts').notNullable().defaultTo(0);
        t.integer('failures').notNullable().defaultTo(0);
        t.timestamp('not_before', { useTz: true });
        t.text('claimed_by');
        t.timestamp('claimed_at', { useTz: true });
        // The outcome events (protobuf MessageEvent, and a BotUpdateEvent when the person is unreachable).
        t.binary('outcome');
        t.binary('side_effect');
        t.boolean('published').notNullable().defaultTo(false);
        t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
        t.timestamp('finished_at', { useTz: true });
      });
      await db.raw(
        `create index deliveries_open on deliveries (kafka_partition, bot_id, seq) where status in ('pending', 'sending')`,
      );
      await db.raw(
        `create index deliveries_unpublished on deliveries (kafka_partition) where status in ('sent', 'failed') and not published`,
      );
      await db.raw(
        `create index deliveries_finished on deliveries (finished_at) where finished_at is not null`,
      );
      await db.schema.createTable('update_cursors', (t) => {
        t.text('bot_id').primary();
        t.text('cursor').notNullable();
        t.timestamp('updated_at', { useTz: true }).notNullable();
      });
    },
    down: async (db) => {
      await db.schema.dropTable('update_cursors');
      await db.schema.dropTable('deliveries');
    },
  },
  {
    // Rows used to be written for every message as it was read (and all had their publication marked);
    // now most are written at their first claim and published while their Kafka offset waits. Only parked
    // rows (`spilled`) are marked published; every row written before is one of them.
    name: '0002_spilled',
    up: async (db) => {
      await db.schema.alterTable('deliveries', (t) => {
        t.boolean('spilled').notNullable().defaultTo(false);
      });
      await db.raw(`update deliveries set spilled = true`);
      await db.raw(`drop index deliveries_unpublished`);
      await db.raw(
        `create index deliveries_unpublished on deliveries (kafka_partition) where status in ('sent', 'failed') and spilled and not published`,
      );
    },
    down: async (db) => {
      await db.raw(`drop index deliveries_unpublished`);
      await db.raw(
        `create index deliveries_unpublished on deliveries (kafka_partition) where status in ('sent', 'failed') and not published`,
      );
      await db.schema.alterTable('deliveries', (t) => t.dropColumn('spilled'));
    },
  },
  deadLettersMigration,
  {
    // Messages held until their send_at: status 'scheduled' (not open work: no lane reads them) until the
    // sender makes them pending shortly before their time, read by this index.
    name: '0003_scheduled',
    up: async (db) => {
      await db.raw(
        `create index deliveries_scheduled on deliveries (kafka_partition, not_before) where status = 'scheduled'`,
      );
    },
    down: async (db) => {
      await db.raw(`drop index deliveries_scheduled`);
    },
  },
];
