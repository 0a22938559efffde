import type { Knex } from '@mds/db';
import { UUID } from './personal-data.js';

export interface RequestMetadataRow {
  request_id: string;
  company_id: string;
  metadata: Record<string, string>;
}

/** Keeps the metadata of requests (a request event that comes again changes nothing). */
export async function rememberRequestMetadata(db: Knex, rows: readonly RequestMetadataRow[]): Promise<void> {
  const kept = rows.filter((r) => UUID.test(r.request_id));
  if (kept.length === 0) return;
  await db('request_metadata')
    .insert(kept.map((r) => ({ ...r, metadata: JSON.stringify(r.metadata) })))
    .onConflict('request_id')
    .ignore();
}

/** The metadata of those of the requests that carried some, by request id. */
export async function requestMetadataById(
  db: Knex,
  requestIds: readonly string[],
): Promise<Map<string, Record<string, string>>> {
  const ids = [...new Set(requestIds.filter((id) => UUID.test(id)))];
  if (ids.length === 0) return new Map();
  const rows = await db('request_metadata')
    .whereIn('request_id', ids)
    .select<Pick<RequestMetadataRow, 'request_id' | 'metadata'>[]>('request_id', 'metadata');
  return new Map(rows.map((r) => [r.request_id, r.metadata]));
}
