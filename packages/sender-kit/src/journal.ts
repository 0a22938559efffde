import type { Knex, Migration } from '@mds/db';
import { groupCommit } from './group-commit.js';

/**
 * The sender's journal of deliveries, in its own schema: every routed delivery is stored here before its
 * Kafka offset is committed, and each provider call is claimed here before it is made. It gives
 * - one outcome per message: the outcome is stored (compare-and-set on the claim) before it is published;
 * - crash safety: a claim without an outcome after a crash means "the call may have reached the person";
 * - bot isolation: Kafka is read ahead into this table, so a slow bot never holds other bots' messages.
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
];

export interface NewDelivery {
  messageId: string;
  botId: string;
  partition: number;
  request: Buffer;
  deliverBefore: Date;
}

export interface StoredDelivery {
  messageId: string;
  seq: bigint;
  botId: string;
  partition: number;
  request: Buffer;
  deliverBefore: Date;
  status: 'pending' | 'sending' | 'sent' | 'failed';
  attempts: number;
  failures: number;
  notBefore: Date | null;
  claimedAt: Date | null;
  outcome: Buffer | null;
  sideEffect: Buffer | null;
}

interface Row {
  message_id: string;
  seq: string;
  bot_id: string;
  kafka_partition: number;
  request: Buffer;
  deliver_before: Date;
  status: StoredDelivery['status'];
  attempts: number;
  failures: number;
  not_before: Date | null;
  claimed_at: Date | null;
  outcome: Buffer | null;
  side_effect: Buffer | null;
}

const COLUMNS = [
  'message_id',
  'seq',
  'bot_id',
  'kafka_partition',
  'request',
  'deliver_before',
  'status',
  'attempts',
  'failures',
  'not_before',
  'claimed_at',
  'outcome',
  'side_effect',
];

function fromRow(r: Row): StoredDelivery {
  return {
    messageId: r.message_id,
    seq: BigInt(r.seq),
    botId: r.bot_id,
    partition: r.kafka_partition,
    request: r.request,
    deliverBefore: r.deliver_before,
    status: r.status,
    attempts: r.attempts,
    failures: r.failures,
    notBefore: r.not_before,
    claimedAt: r.claimed_at,
    outcome: r.outcome,
    sideEffect: r.side_effect,
  };
}

export interface Outcome {
  messageId: string;
  status: 'sent' | 'failed';
  outcome: Buffer;
  sideEffect?: Buffer;
}

export type Journal = ReturnType<typeof createJournal>;

/** The journal's statements; the per-message ones are group-committed (see groupCommit). */
export function createJournal(db: Knex, instanceId: string) {
  const claim = groupCommit<string, number | undefined>(async (ids) => {
    const rows = (
      await db.raw<{ rows: { message_id: string; attempts: number }[] }>(
        `update deliveries set status = 'sending', claimed_by = ?, claimed_at = now(), attempts = attempts + 1
         where message_id = any(?::uuid[]) and status = 'pending' returning message_id, attempts`,
        [instanceId, ids],
      )
    ).rows;
    const attempts = new Map(rows.map((r) => [r.message_id, r.attempts]));
    return ids.map((id) => attempts.get(id));
  });

  const settle = groupCommit<Outcome, boolean>(async (outcomes) => {
    const rows = (
      await db.raw<{ rows: { message_id: string }[] }>(
        `update deliveries d set status = v.status, outcome = v.outcome, side_effect = v.side_effect,
           finished_at = now(), claimed_by = null
         from unnest(?::uuid[], ?::text[], ?::bytea[], ?::bytea[]) as v(message_id, status, outcome, side_effect)
         where d.message_id = v.message_id
           and ((d.status = 'sending' and d.claimed_by = ?)
             -- the same outcome stored already: a retry whose first answer was lost (idempotent)
             or (d.status = v.status and d.outcome = v.outcome))
         returning d.message_id`,
        [
          outcomes.map((o) => o.messageId),
          outcomes.map((o) => o.status),
          outcomes.map((o) => o.outcome),
          outcomes.map((o) => o.sideEffect ?? null),
          instanceId,
        ] as never,
      )
    ).rows;
    const done = new Set(rows.map((r) => r.message_id));
    return outcomes.map((o) => done.has(o.messageId));
  });

  const release = groupCommit<{ messageId: string; notBefore: Date; failed: boolean }, boolean>(
    async (items) => {
      const rows = (
        await db.raw<{ rows: { message_id: string }[] }>(
          `update deliveries d set status = 'pending', not_before = v.not_before, claimed_by = null,
             failures = d.failures + case when v.failed then 1 else 0 end
           from unnest(?::uuid[], ?::timestamptz[], ?::boolean[]) as v(message_id, not_before, failed)
           where d.message_id = v.message_id and d.status = 'sending' and d.claimed_by = ?
           returning d.message_id`,
          [
            items.map((i) => i.messageId),
            items.map((i) => i.notBefore),
            items.map((i) => i.failed),
            instanceId,
          ],
        )
      ).rows;
      const done = new Set(rows.map((r) => r.message_id));
      return items.map((i) => done.has(i.messageId));
    },
  );

  const markPublished = groupCommit<string, void>(async (ids) => {
    await db.raw(`update deliveries set published = true where message_id = any(?::uuid[])`, [ids]);
    return ids.map(() => undefined);
  });

  return {
    /** Stores new deliveries; returns those not seen before, with their order. */
    async insert(deliveries: NewDelivery[]): Promise<StoredDelivery[]> {
      if (deliveries.length === 0) return [];
      const rows = (
        await db.raw<{ rows: Row[] }>(
          `insert into deliveries (message_id, bot_id, kafka_partition, request, deliver_before)
           select * from unnest(?::uuid[], ?::text[], ?::int[], ?::bytea[], ?::timestamptz[])
           on conflict (message_id) do nothing
           returning ${COLUMNS.join(', ')}`,
          [
            deliveries.map((d) => d.messageId),
            deliveries.map((d) => d.botId),
            deliveries.map((d) => d.partition),
            deliveries.map((d) => d.request),
            deliveries.map((d) => d.deliverBefore),
          ],
        )
      ).rows;
      return rows.map(fromRow);
    },
    /** Takes a message for one provider call: the attempt number, or undefined if it is not pending. */
    claim,
    /**
     * Stores the outcome of a claimed message; false if the claim was lost (another owner took over).
     * Idempotent: storing the same outcome again answers true (a retry after a lost answer).
     */
    settle,
    /** Gives a claimed message back for a later attempt. */
    release,
    markPublished,
    /** Open deliveries of one bot after `afterSeq`, in order. */
    async openOfBot(botId: string, afterSeq: bigint, limit: number): Promise<StoredDelivery[]> {
      const rows = (await db('deliveries')
        .select(COLUMNS)
        .where('bot_id', botId)
        .whereIn('status', ['pending', 'sending'])
        .andWhere('seq', '>', afterSeq.toString())
        .orderBy('seq')
        .limit(limit)) as Row[];
      return rows.map(fromRow);
    },
    /** Bots with open deliveries in these partitions. */
    async botsWithOpenWork(partitions: readonly number[]): Promise<string[]> {
      if (partitions.length === 0) return [];
      const rows = await db<Row>('deliveries')
        .distinct('bot_id')
        .whereIn('kafka_partition', partitions)
        .whereIn('status', ['pending', 'sending']);
      return rows.map((r) => r.bot_id);
    },
    /** Decided outcomes not yet known to be in Kafka (a crash between storing and publishing). */
    async unpublished(partitions: readonly number[]): Promise<StoredDelivery[]> {
      if (partitions.length === 0) return [];
      const rows = (await db('deliveries')
        .select(COLUMNS)
        .whereIn('kafka_partition', partitions)
        .whereIn('status', ['sent', 'failed'])
        .andWhere('published', false)
        .orderBy('seq')) as Row[];
      return rows.map(fromRow);
    },
    /**
     * A claim that never got its outcome, older than `olderThan`: the process that made it is gone (its
     * call has long timed out). Its outcome is stored here instead; false if it was decided meanwhile.
     */
    async settleAbandoned(outcome: Outcome, olderThan: Date): Promise<boolean> {
      const updated = await db('deliveries')
        .where({ message_id: outcome.messageId, status: 'sending' })
        .andWhere('claimed_at', '<', olderThan)
        .update({
          status: outcome.status,
          outcome: outcome.outcome,
          side_effect: outcome.sideEffect ?? null,
          finished_at: db.fn.now(),
          claimed_by: null,
        });
      return updated > 0;
    },
    /** Forgets finished deliveries older than the retention. */
    async forgetFinished(olderThan: Date): Promise<number> {
      return db('deliveries').where('finished_at', '<', olderThan).andWhere('published', true).delete();
    },
    async cursor(botId: string): Promise<string | undefined> {
      const row = await db<{ cursor: string }>('update_cursors').where('bot_id', botId).first('cursor');
      return row?.cursor;
    },
    async saveCursor(botId: string, cursor: string): Promise<void> {
      await db('update_cursors')
        .insert({ bot_id: botId, cursor, updated_at: new Date() })
        .onConflict('bot_id')
        .merge();
    },
  };
}
