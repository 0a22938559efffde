import type { Knex } from '@mds/db';
import type { PartitionLag } from '@mds/kafka';

/** A replica that has not reported for this long is gone or stuck: its partitions count as behind since then. */
export const SILENT_AFTER_MS = 30_000;

/** Stores what one replica's read-model consumer says of the partitions it owns now. */
export async function reportLag(
  db: Knex,
  replica: string,
  lag: readonly PartitionLag[],
  now: Date,
): Promise<void> {
  if (lag.length === 0) return;
  await db('read_model_lag')
    .insert(
      lag.map((p) => ({
        topic: p.topic,
        kafka_partition: p.partition,
        records_behind: p.records,
        oldest_pending_at: p.oldestPendingAt === undefined ? null : new Date(p.oldestPendingAt),
        reported_by: replica,
        reported_at: now,
      })),
    )
    .onConflict(['topic', 'kafka_partition'])
    .merge();
}

/**
 * How far behind the read models are, in seconds, over every partition of the group whichever replica owns
 * it: the age of the oldest event not yet stored, and for a partition whose owner stopped reporting, at
 * least the time since it last did (what happened since is not known to be stored).
 */
export async function readModelsBehind(db: Knex, now: Date): Promise<{ seconds: number; records: number }> {
  const rows = await db('read_model_lag').select<
    { records_behind: string; oldest_pending_at: Date | null; reported_at: Date }[]
  >('records_behind', 'oldest_pending_at', 'reported_at');
  let seconds = 0;
  let records = 0;
  for (const row of rows) {
    records += Number(row.records_behind);
    const pending = row.oldest_pending_at ? now.getTime() - row.oldest_pending_at.getTime() : 0;
    const silentFor = now.getTime() - row.reported_at.getTime();
    const silent = silentFor > SILENT_AFTER_MS ? silentFor : 0;
    seconds = Math.max(seconds, Math.round(Math.max(pending, silent) / 1000));
  }
  return { seconds, records };
}
