import type { RetentionRule } from '@mds/personal-data';
import type { Knex } from '@mds/db';
import { groupCommit } from './group-commit.js';

export { journalMigrations } from './journal-migrations.js';

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

/** What every statement needs: the database, this replica's name on its claims, the abandon window. */
interface Scope {
  db: Knex;
  instanceId: string;
  /** The longest a live claim can last (calls, and the retries of storing their outcome). */
  abandonAfterSeconds: number;
}

/**
 * Claims messages read from the log by writing their rows: 1 (a first attempt); the row one had already
 * (another claim, a parked or a decided message); or undefined if another replica wrote it this instant.
 */
async function claimNewRows(
  s: Scope,
  items: NewDelivery[],
): Promise<(number | StoredDelivery | undefined)[]> {
  const { rows } = await s.db.raw<{ rows: (Partial<Row> & { asked: string; fresh: boolean })[] }>(
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
      s.instanceId,
      items.map((d) => d.messageId),
      items.map((d) => d.botId),
      items.map((d) => d.partition),
      items.map((d) => d.request),
      items.map((d) => d.deliverBefore),
      s.abandonAfterSeconds,
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
}

/** Claims parked messages (or ones given back for a retry): each one's attempt number, or undefined. */
async function claimParkedRows(s: Scope, ids: string[]): Promise<(number | undefined)[]> {
  const { rows } = await s.db.raw<{ rows: { message_id: string; attempts: number }[] }>(
    `update deliveries set status = 'sending', claimed_by = ?, claimed_at = now(), attempts = attempts + 1
     where message_id = any(?::uuid[]) and status = 'pending' returning message_id, attempts`,
    [s.instanceId, ids],
  );
  const attempts = new Map(rows.map((r) => [r.message_id, r.attempts]));
  return firstOfEach(
    ids,
    (id) => id,
    (id) => attempts.get(id),
    undefined,
  );
}

async function settleRows(s: Scope, outcomes: Outcome[]): Promise<boolean[]> {
  const { rows } = await s.db.raw<{ rows: { message_id: string }[] }>(
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
      s.instanceId,
    ] as never,
  );
  const done = new Set(rows.map((r) => r.message_id));
  return firstOfEach(
    outcomes,
    (o) => o.messageId,
    (o) => done.has(o.messageId),
    false,
  );
}

interface GiveBack {
  messageId: string;
  notBefore: Date;
  failed: boolean;
}

async function releaseRows(s: Scope, items: GiveBack[]): Promise<boolean[]> {
  const { rows } = await s.db.raw<{ rows: { message_id: string }[] }>(
    `update deliveries d set status = 'pending', not_before = v.not_before, claimed_by = null, spilled = true,
       failures = d.failures + case when v.failed then 1 else 0 end
     from unnest(?::uuid[], ?::timestamptz[], ?::boolean[]) as v(message_id, not_before, failed)
     where d.message_id = v.message_id and d.status = 'sending' and d.claimed_by = ?
     returning d.message_id`,
    [items.map((i) => i.messageId), items.map((i) => i.notBefore), items.map((i) => i.failed), s.instanceId],
  );
  const done = new Set(rows.map((r) => r.message_id));
  return firstOfEach(
    items,
    (i) => i.messageId,
    (i) => done.has(i.messageId),
    false,
  );
}

async function markPublishedRows(s: Scope, ids: string[]): Promise<void[]> {
  await s.db.raw(`update deliveries set published = true where message_id = any(?::uuid[])`, [ids]);
  return ids.map(() => undefined);
}

/** Parks messages read from the log; returns the rows that were there already. */
async function park(s: Scope, deliveries: NewDelivery[]): Promise<StoredDelivery[]> {
  if (deliveries.length === 0) return [];
  const { rows } = await s.db.raw<{ rows: Row[] }>(
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
      s.abandonAfterSeconds,
      deliveries.map((d) => d.messageId),
    ],
  );
  return rows.map(fromRow);
}

/**
 * Stores messages decided without a call (no route to a person): each row written once, with its outcome.
 * Returns the rows that were there already: another decision of the same message came first.
 */
async function decideAtOnce(
  s: Scope,
  items: (NewDelivery & { outcome: Buffer })[],
): Promise<StoredDelivery[]> {
  if (items.length === 0) return [];
  const { rows } = await s.db.raw<{ rows: Row[] }>(
    `with fresh as (
       insert into deliveries (message_id, bot_id, kafka_partition, request, deliver_before, status, outcome,
         finished_at)
       select v.*, now() from unnest(?::uuid[], ?::text[], ?::int[], ?::bytea[], ?::timestamptz[], ?::text[],
           ?::bytea[])
         as v(message_id, bot_id, kafka_partition, request, deliver_before, status, outcome)
       on conflict (message_id) do nothing
       returning message_id
     )
     select ${COLUMNS} from deliveries
     where message_id = any(?::uuid[]) and message_id not in (select message_id from fresh)`,
    [
      items.map((d) => d.messageId),
      items.map((d) => d.botId),
      items.map((d) => d.partition),
      items.map((d) => d.request),
      items.map((d) => d.deliverBefore),
      items.map(() => 'failed'),
      items.map((d) => d.outcome),
      s.abandonAfterSeconds,
      items.map((d) => d.messageId),
    ],
  );
  return rows.map(fromRow);
}

async function rowsOf(s: Scope, messageIds: readonly string[]): Promise<StoredDelivery[]> {
  if (messageIds.length === 0) return [];
  const { rows } = await s.db.raw<{ rows: Row[] }>(
    `select ${COLUMNS} from deliveries where message_id = any(?::uuid[])`,
    [s.abandonAfterSeconds, [...messageIds]],
  );
  return rows.map(fromRow);
}

async function openOfBot(
  s: Scope,
  botId: string,
  afterSeq: bigint,
  limit: number,
): Promise<StoredDelivery[]> {
  const { rows } = await s.db.raw<{ rows: Row[] }>(
    `select ${COLUMNS} from deliveries
     where bot_id = ? and status in ('pending', 'sending') and seq > ?
     order by seq limit ?`,
    [s.abandonAfterSeconds, botId, afterSeq.toString(), limit],
  );
  return rows.map(fromRow);
}

async function botsWithOpenWork(s: Scope, partitions: readonly number[]): Promise<string[]> {
  if (partitions.length === 0) return [];
  const rows = await s
    .db<Row>('deliveries')
    .distinct('bot_id')
    .whereIn('kafka_partition', partitions)
    .whereIn('status', ['pending', 'sending']);
  return rows.map((r) => r.bot_id);
}

async function unpublished(s: Scope, partitions: readonly number[]): Promise<StoredDelivery[]> {
  if (partitions.length === 0) return [];
  const { rows } = await s.db.raw<{ rows: Row[] }>(
    `select ${COLUMNS} from deliveries
     where kafka_partition = any(?::int[]) and status in ('sent', 'failed') and spilled and not published
     order by seq`,
    [s.abandonAfterSeconds, [...partitions]],
  );
  return rows.map(fromRow);
}

async function settleAbandoned(s: Scope, outcome: Outcome): Promise<boolean> {
  const { rowCount } = await s.db.raw<{ rowCount: number | null }>(
    `update deliveries set status = ?, outcome = ?, side_effect = ?, finished_at = now(), claimed_by = null
     where message_id = ? and status = 'sending' and claimed_at < now() - make_interval(secs => ?)`,
    [outcome.status, outcome.outcome, outcome.sideEffect ?? null, outcome.messageId, s.abandonAfterSeconds],
  );
  return (rowCount ?? 0) > 0;
}

/**
 * The journal's statements; the per-message ones are group-committed (calls made while one is in flight
 * share the next statement). `abandonAfterSeconds` is the longest a live claim can last (calls, and the
 * retries of storing their outcome): a claim older than that, by the database's clock, was abandoned.
 */
export function createJournal(db: Knex, instanceId: string, abandonAfterSeconds: number) {
  const s: Scope = { db, instanceId, abandonAfterSeconds };
  return {
    /** This replica's name on its claims. */
    instanceId,
    /**
     * Claims a message read from the log for one call, by writing its row: 1 (its first attempt), the row
     * it has already (another claim, a parked or a decided message), or undefined (another replica's, now).
     */
    claimNew: groupCommit((items: NewDelivery[]) => claimNewRows(s, items)),
    /** Claims a parked message for one call: the attempt number, or undefined if it is not pending. */
    claimParked: groupCommit((ids: string[]) => claimParkedRows(s, ids)),
    /**
     * Stores the outcome of a claimed message; false if the claim was lost (another owner took over).
     * Idempotent: storing the same outcome again answers true (a retry after a lost answer).
     */
    settle: groupCommit((outcomes: Outcome[]) => settleRows(s, outcomes)),
    /** Gives a claimed message back for a later attempt: it is parked from then on. */
    release: groupCommit((items: GiveBack[]) => releaseRows(s, items)),
    markPublished: groupCommit((ids: string[]) => markPublishedRows(s, ids)),
    /**
     * Parks messages read from the log that must wait (a bot's backlog beyond its window). Returns the rows
     * that were there already, for the caller to see what came of those messages.
     */
    park: (deliveries: NewDelivery[]) => park(s, deliveries),
    /** Fails messages no call can be made for, by writing their rows; returns the rows there already. */
    decideAtOnce: (items: (NewDelivery & { outcome: Buffer })[]) => decideAtOnce(s, items),
    /** The rows of these messages (those that have one). */
    rowsOf: (messageIds: readonly string[]) => rowsOf(s, messageIds),
    /** Open (pending or sending) deliveries of one bot after `afterSeq`, in order. */
    openOfBot: (botId: string, afterSeq: bigint, limit: number) => openOfBot(s, botId, afterSeq, limit),
    /** Bots with open deliveries in these partitions. */
    botsWithOpenWork: (partitions: readonly number[]) => botsWithOpenWork(s, partitions),
    /** Decided outcomes of parked deliveries not yet known to be in Kafka (a crash before publishing). */
    unpublished: (partitions: readonly number[]) => unpublished(s, partitions),
    /**
     * A claim that never got its outcome, older than the abandon window by the database's clock: the process
     * that made it has surely stopped (its calls and its retries have long ended). Its outcome is stored here
     * instead; false if it was decided (or given back) meanwhile, or is not that old yet.
     */
    settleAbandoned: (outcome: Outcome) => settleAbandoned(s, outcome),
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

export type Journal = ReturnType<typeof createJournal>;

/** Finished deliveries older than `days` go (a parked one once its outcome is published); open work stays. */
export function journalRetentionRule(days: number): RetentionRule {
  return { table: 'deliveries', column: 'finished_at', days, onlyWhere: 'published or not spilled' };
}
