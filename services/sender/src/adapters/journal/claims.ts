import type { NewDelivery, StoredDelivery } from '../../application/ports.js';
import { columns, COLUMNS, firstOfEach, fromRow, type Row, type Scope } from './rows.js';

/**
 * Claims messages read from the log by writing their rows: 1 (a first attempt); the row one had already
 * (another claim, a parked or a decided message); or undefined if another replica wrote it this instant.
 */
export async function claimNewRows(
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
export async function claimParkedRows(s: Scope, ids: string[]): Promise<(number | undefined)[]> {
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

/** Parks messages read from the log; returns the rows that were there already. */
export async function park(s: Scope, deliveries: NewDelivery[]): Promise<StoredDelivery[]> {
  if (deliveries.length === 0) return [];
  const { rows } = await s.db.raw<{ rows: Row[] }>(
    `with fresh as (
       insert into deliveries (message_id, bot_id, kafka_partition, request, deliver_before, not_before, status,
         spilled)
       select v.*, case when v.not_before is null then 'pending' else 'scheduled' end, true
       from unnest(?::uuid[], ?::text[], ?::int[], ?::bytea[], ?::timestamptz[], ?::timestamptz[])
         as v(message_id, bot_id, kafka_partition, request, deliver_before, not_before)
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
      deliveries.map((d) => d.sendAt ?? null),
      s.abandonAfterSeconds,
      deliveries.map((d) => d.messageId),
    ] as never,
  );
  return rows.map(fromRow);
}

/** Scheduled rows due by `until` become pending, each with a new seq (after every row a lane read already). */
export async function promoteDue(
  s: Scope,
  partitions: readonly number[],
  until: Date,
): Promise<{ messageId: string; botId: string; partition: number }[]> {
  if (partitions.length === 0) return [];
  const { rows } = await s.db.raw<{
    rows: { message_id: string; bot_id: string; kafka_partition: number }[];
  }>(
    `update deliveries set status = 'pending', seq = nextval(pg_get_serial_sequence('deliveries', 'seq'))
     where status = 'scheduled' and kafka_partition = any(?::int[]) and not_before <= ?
     returning message_id, bot_id, kafka_partition`,
    [[...partitions], until],
  );
  return rows.map((r) => ({ messageId: r.message_id, botId: r.bot_id, partition: r.kafka_partition }));
}

export async function unpromote(s: Scope, messageIds: readonly string[]): Promise<void> {
  if (messageIds.length === 0) return;
  await s.db.raw(
    `update deliveries set status = 'scheduled' where message_id = any(?::uuid[]) and status = 'pending'`,
    [[...messageIds]],
  );
}

/**
 * Stores CANCELED as the outcome of messages no call was claimed for: no row yet (held in memory, or not yet
 * read), or parked or scheduled and never attempted. A row claimed or attempted, or decided, is left as it
 * is. The row is marked spilled, so an outcome not yet published is published by whoever owns the partition.
 */
export async function cancelRows(
  s: Scope,
  items: { messageId: string; partition: number; request: Buffer; outcome: Buffer }[],
): Promise<string[]> {
  const unique = [...new Map(items.map((i) => [i.messageId, i])).values()];
  if (unique.length === 0) return [];
  const { rows } = await s.db.raw<{ rows: { message_id: string }[] }>(
    `insert into deliveries as d (message_id, bot_id, kafka_partition, request, deliver_before, status, outcome,
       spilled, finished_at)
     select v.message_id, '', v.kafka_partition, v.request, now(), 'failed', v.outcome, true, now()
     from unnest(?::uuid[], ?::int[], ?::bytea[], ?::bytea[]) as v(message_id, kafka_partition, request, outcome)
     on conflict (message_id) do update
       set status = 'failed', outcome = excluded.outcome, spilled = true, published = false, finished_at = now()
       where d.status in ('pending', 'scheduled') and d.attempts = 0
     returning d.message_id`,
    [
      unique.map((i) => i.messageId),
      unique.map((i) => i.partition),
      unique.map((i) => i.request),
      unique.map((i) => i.outcome),
    ],
  );
  return rows.map((r) => r.message_id);
}

/**
 * Stores messages decided without a call (no route to a person): each row written once, with its outcome.
 * Returns the rows that were there already: another decision of the same message came first.
 */
export async function decideAtOnce(
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
