import type { StoredDelivery } from '../../application/ports.js';
import { COLUMNS, fromRow, type Row, type Scope } from './rows.js';

export async function rowsOf(s: Scope, messageIds: readonly string[]): Promise<StoredDelivery[]> {
  if (messageIds.length === 0) return [];
  const { rows } = await s.db.raw<{ rows: Row[] }>(
    `select ${COLUMNS} from deliveries where message_id = any(?::uuid[])`,
    [s.abandonAfterSeconds, [...messageIds]],
  );
  return rows.map(fromRow);
}

export async function openOfBot(
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

export async function botsWithOpenWork(s: Scope, partitions: readonly number[]): Promise<string[]> {
  if (partitions.length === 0) return [];
  const rows = await s
    .db<Row>('deliveries')
    .distinct('bot_id')
    .whereIn('kafka_partition', partitions)
    .whereIn('status', ['pending', 'sending']);
  return rows.map((r) => r.bot_id);
}

export async function unpublished(s: Scope, partitions: readonly number[]): Promise<StoredDelivery[]> {
  if (partitions.length === 0) return [];
  const { rows } = await s.db.raw<{ rows: Row[] }>(
    `select ${COLUMNS} from deliveries
     where kafka_partition = any(?::int[]) and status in ('sent', 'failed') and spilled and not published
     order by seq`,
    [s.abandonAfterSeconds, [...partitions]],
  );
  return rows.map(fromRow);
}
