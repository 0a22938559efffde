import { deadLettersMigration, type Knex, type Migration } from '@mds/db';
import { groupCommit } from './group-commit.js';

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
];

export interface NewDelivery {
  messageId: string;
  botId: string;
  partition: number;
  request: Buffer;
  deliverBefore: Date;
}

export type DeliveryStatus = 'pending' | 'sending' | 'sent' | 'failed';

export interface StoredDelivery {
  messageId: string;
  seq: bigint;
  botId: string;
  partition: number;
  request: Buffer;
  deliverBefore: Date;
  status: DeliveryStatus;
  attempts: number;
  failures: number;
  notBefore: Date | null;
  claimedBy: string | null;
  /** A claim older than the abandon window: whoever made it has surely stopped. */
  claimAbandoned: boolean;
  outcome: Buffer | null;
  sideEffect: Buffer | null;
  spilled: boolean;
  published: boolean;
}

interface Row {
  message_id: string;
  seq: string;
  bot_id: string;
  kafka_partition: number;
  request: Buffer;
  deliver_before: Date;
  status: DeliveryStatus;
  attempts: number;
  failures: number;
  not_before: Date | null;
  claimed_by: string | null;
  claim_abandoned: boolean;
  outcome: Buffer | null;
  side_effect: Buffer | null;
  spilled: boolean;
  published: boolean;
}

/** The columns of a StoredDelivery (of the table aliased `prefix`); `?` is the abandon window in seconds. */
const columns = (p = '') =>
  `${p}message_id, ${p}seq, ${p}bot_id, ${p}kafka_partition, ${p}request, ${p}deliver_before, ${p}status,
   ${p}attempts, ${p}failures, ${p}not_before, ${p}claimed_by,
   coalesce(${p}claimed_at < now() - make_interval(secs => ?), false) as claim_abandoned,
   ${p}outcome, ${p}side_effect, ${p}spilled, ${p}published`;
const COLUMNS = columns();

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
    claimedBy: r.claimed_by,
    claimAbandoned: r.claim_abandoned,
    outcome: r.outcome,
    sideEffect: r.side_effect,
    spilled: r.spilled,
    published: r.published,
  };
}

export interface Outcome {
  messageId: string;
  status: 'sent' | 'failed';
  outcome: Buffer;
  sideEffect?: Buffer;
}

/**
 * Answers items in their order, each id once: a second caller for an id already in the same batch is
 * answered `lost` (two callers of one message never both win: one of them is a lane left over from a
 * rebalance).
 */
function firstOfEach<T, R>(items: T[], idOf: (item: T) => string, answer: (item: T) => R, lost: R): R[] {
  const seen = new Set<string>();
  return items.map((item) => {
    const id = idOf(item);
    if (seen.has(id)) return lost;
    seen.add(id);
    return answer(item);
  });
}

export type Journal = ReturnType<typeof createJournal>;

/**
 * The journal's statements; the per-message ones are group-committed (calls made while one is in flight
 * share the next statement). `abandonAfterSeconds` is the longest a live claim can last (calls, and the
 * retries of storing their outcome): a claim older than that, by the database's clock, was abandoned.
 */
export function createJournal(db: Knex, instanceId: string, abandonAfterSeconds: number) {
  /**
   * Claims a message read from the log by writing its row: 1 (its first attempt); its row, if it had one
   * (another claim, a parked or a decided message); or undefined if another replica wrote it this instant.
   */
  const claimNew = groupCommit<NewDelivery, number | StoredDelivery | undefined>(async (items) => {
    const { rows } = await db.raw<{ rows: (Partial<Row> & { asked: string; fresh: boolean })[] }>(
      `with fresh as (
         insert into deliveries (message_id, bot_id, kafka_partition, request, deliver_before, status, attempts,
           claimed_by, claimed_at)
         select v.*, 'sending', 1, ?, now()
         from unnest(?::uuid[], ?::text[], ?::int[], ?::bytea[], ?::timestamptz[])
           as v(message_id, bot_id, kafka_partition, request, deliver_before)
         on conflict (message_id) do nothing
         returning message_id
       )
       -- One snapshot for the whole statement: the rows inserted above are not seen below, rows that were
       -- there before are, and a row another transaction committed meanwhile is neither.
       select a.asked, f.message_id is not null as fresh, ${columns('d.')}
       from unnest(?::uuid[]) as a(asked)
       left join fresh f on f.message_id = a.asked
       left join deliveries d on d.message_id = a.asked`,
      [
        instanceId,
        items.map((d) => d.messageId),
        items.map((d) => d.botId),
        items.map((d) => d.partition),
        items.map((d) => d.request),
        items.map((d) => d.deliverBefore),
        abandonAfterSeconds,
        items.map((d) => d.messageId),
      ],
    );
    const answers = new Map(
      rows.map((r) => [r.asked, r.fresh ? 1 : r.message_id ? fromRow(r as Row) : undefined] as const),
    );
    return firstOfEach(
      items,
      (d) => d.messageId,
      (d) => answers.get(d.messageId),
      undefined,
    );
  });

  /** Claims a parked message (or one given back for a retry): its attempt number, or undefined. */
  const claimParked = groupCommit<string, number | undefined>(async (ids) => {
    const { rows } = await db.raw<{ rows: { message_id: string; attempts: number }[] }>(
      `update deliveries set status = 'sending', claimed_by = ?, claimed_at = now(), attempts = attempts + 1
       where message_id = any(?::uuid[]) and status = 'pending' returning message_id, attempts`,
      [instanceId, ids],
    );
    const attempts = new Map(rows.map((r) => [r.message_id, r.attempts]));
    return firstOfEach(
      ids,
      (id) => id,
      (id) => attempts.get(id),
      undefined,
    );
  });

  const settle = groupCommit<Outcome, boolean>(async (outcomes) => {
    const { rows } = await db.raw<{ rows: { message_id: string }[] }>(
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
    );
    const done = new Set(rows.map((r) => r.message_id));
    return firstOfEach(
      outcomes,
      (o) => o.messageId,
      (o) => done.has(o.messageId),
      false,
    );
  });

  const release = groupCommit<{ messageId: string; notBefore: Date; failed: boolean }, boolean>(
    async (items) => {
      const { rows } = await db.raw<{ rows: { message_id: string }[] }>(
        `update deliveries d set status = 'pending', not_before = v.not_before, claimed_by = null, spilled = true,
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
      );
      const done = new Set(rows.map((r) => r.message_id));
      return firstOfEach(
        items,
        (i) => i.messageId,
        (i) => done.has(i.messageId),
        false,
      );
    },
  );

  const markPublished = groupCommit<string, void>(async (ids) => {
    await db.raw(`update deliveries set published = true where message_id = any(?::uuid[])`, [ids]);
    return ids.map(() => undefined);
  });

  return {
    /** This replica's name on its claims. */
    instanceId,
    /**
     * Parks messages read from the log that must wait (a bot's backlog beyond its window). Returns the
     * rows that were there already, for the caller to see what came of them.
     */
    async park(deliveries: NewDelivery[]): Promise<StoredDelivery[]> {
      if (deliveries.length === 0) return [];
      const { rows } = await db.raw<{ rows: Row[] }>(
        `with fresh as (
           insert into deliveries (message_id, bot_id, kafka_partition, request, deliver_before, spilled)
           select v.*, true from unnest(?::uuid[], ?::text[], ?::int[], ?::bytea[], ?::timestamptz[])
             as v(message_id, bot_id, kafka_partition, request, deliver_before)
           on conflict (message_id) do nothing
           returning message_id
         )
         select ${COLUMNS} from deliveries
         where message_id = any(?::uuid[]) and message_id not in (select message_id from fresh)`,
        [
          deliveries.map((d) => d.messageId),
          deliveries.map((d) => d.botId),
          deliveries.map((d) => d.partition),
          deliveries.map((d) => d.request),
          deliveries.map((d) => d.deliverBefore),
          abandonAfterSeconds,
          deliveries.map((d) => d.messageId),
        ],
      );
      return rows.map(fromRow);
    },
    /** The rows of these messages (those that have one). */
    async rowsOf(messageIds: readonly string[]): Promise<StoredDelivery[]> {
      if (messageIds.length === 0) return [];
      const { rows } = await db.raw<{ rows: Row[] }>(
        `select ${COLUMNS} from deliveries where message_id = any(?::uuid[])`,
        [abandonAfterSeconds, [...messageIds]],
      );
      return rows.map(fromRow);
    },
    /**
     * Claims a message read from the log for one call, by writing its row: 1 (its first attempt), or the
     * row it has already (another claim, a parked or a decided message).
     */
    claimNew,
    /** Claims a parked message for one call: the attempt number, or undefined if it is not pending. */
    claimParked,
    /**
     * Stores the outcome of a claimed message; false if the claim was lost (another owner took over).
     * Idempotent: storing the same outcome again answers true (a retry after a lost answer).
     */
    settle,
    /** Gives a claimed message back for a later attempt: it is parked from then on. */
    release,
    markPublished,
    /** Open (pending or sending) deliveries of one bot after `afterSeq`, in order. */
    async openOfBot(botId: string, afterSeq: bigint, limit: number): Promise<StoredDelivery[]> {
      const { rows } = await db.raw<{ rows: Row[] }>(
        `select ${COLUMNS} from deliveries
         where bot_id = ? and status in ('pending', 'sending') and seq > ?
         order by seq limit ?`,
        [abandonAfterSeconds, botId, afterSeq.toString(), limit],
      );
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
    /** Decided outcomes of parked deliveries not yet known to be in Kafka (a crash before publishing). */
    async unpublished(partitions: readonly number[]): Promise<StoredDelivery[]> {
      if (partitions.length === 0) return [];
      const { rows } = await db.raw<{ rows: Row[] }>(
        `select ${COLUMNS} from deliveries
         where kafka_partition = any(?::int[]) and status in ('sent', 'failed') and spilled and not published
         order by seq`,
        [abandonAfterSeconds, [...partitions]],
      );
      return rows.map(fromRow);
    },
    /**
     * A claim that never got its outcome, older than the abandon window by the database's clock: the process
     * that made it has surely stopped (its calls and its retries have long ended). Its outcome is stored here
     * instead; false if it was decided (or given back) meanwhile, or is not that old yet.
     */
    async settleAbandoned(outcome: Outcome): Promise<boolean> {
      const { rowCount } = await db.raw<{ rowCount: number | null }>(
        `update deliveries set status = ?, outcome = ?, side_effect = ?, finished_at = now(), claimed_by = null
         where message_id = ? and status = 'sending' and claimed_at < now() - make_interval(secs => ?)`,
        [outcome.status, outcome.outcome, outcome.sideEffect ?? null, outcome.messageId, abandonAfterSeconds],
      );
      return (rowCount ?? 0) > 0;
    },
    /** Forgets finished deliveries older than the retention. */
    async forgetFinished(olderThan: Date): Promise<number> {
      return db('deliveries')
        .where('finished_at', '<', olderThan)
        .andWhere((q) => q.where('published', true).orWhere('spilled', false))
        .delete();
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
