import type { Knex } from '@mds/db';
import { decodeCursor, encodeCursor } from '../../domain/cursor.js';

/** One request a key made, as its request log shows it. */
export interface ApiRequestRow {
  recordId: string;
  companyId: string;
  keyId: string;
  at: Date;
  operation: string;
  status: number;
  eventId: string;
  requestId: string;
  durationMs: number;
}

export interface ApiRequestView {
  at: string;
  operation: string;
  status: number;
  event_id: string | null;
  request_id: string;
  duration_ms: number;
}

const json = (value: unknown) => JSON.stringify(value);

/**
 * Stores request log records (each once: a record that comes again changes nothing) and moves each key's "last
 * used" forward to its newest request.
 */
export async function storeApiRequests(db: Knex, rows: readonly ApiRequestRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.transaction(async (trx) => {
    await trx.raw(
      `insert into api_requests (record_id, company_id, key_id, at, operation, status, event_id, request_id, duration_ms)
       select * from jsonb_to_recordset(?::jsonb) as v(record_id uuid, company_id uuid, key_id text, at timestamptz,
         operation text, status smallint, event_id text, request_id text, duration_ms integer)
       on conflict (record_id) do nothing`,
      [
        json(
          rows.map((r) => ({
            record_id: r.recordId,
            company_id: r.companyId,
            key_id: r.keyId,
            at: r.at,
            operation: r.operation,
            status: r.status,
            event_id: r.eventId,
            request_id: r.requestId,
            duration_ms: r.durationMs,
          })),
        ),
      ],
    );
    const latest = new Map<string, ApiRequestRow>();
    for (const r of rows) {
      const seen = latest.get(r.keyId);
      if (!seen || seen.at < r.at) latest.set(r.keyId, r);
    }
    // Sorted: two batches moving the same keys lock them in the same order.
    const usage = [...latest.values()].sort((a, b) => (a.keyId < b.keyId ? -1 : 1));
    await trx.raw(
      `insert into api_key_usage as u (key_id, company_id, last_used_at)
       select * from jsonb_to_recordset(?::jsonb) as v(key_id text, company_id uuid, last_used_at timestamptz)
       on conflict (key_id) do update set last_used_at = greatest(u.last_used_at, excluded.last_used_at)`,
      [json(usage.map((r) => ({ key_id: r.keyId, company_id: r.companyId, last_used_at: r.at })))],
    );
  });
}

/** A page of one key's requests, newest first, after `cursor` (from a previous page). */
export async function apiRequestsOf(
  db: Knex,
  o: { companyId: string; keyId: string; cursor?: string; limit: number },
): Promise<{ requests: ApiRequestView[]; nextCursor: string | null }> {
  const after = o.cursor ? decodeCursor(o.cursor) : undefined;
  const rows = await db('api_requests')
    .where({ company_id: o.companyId, key_id: o.keyId })
    .modify((q) => {
      if (after) q.whereRaw('(at, record_id) < (?, ?::uuid)', [new Date(after.at), after.id]);
    })
    .orderBy([
      { column: 'at', order: 'desc' },
      { column: 'record_id', order: 'desc' },
    ])
    .limit(o.limit + 1)
    .select<
      {
        record_id: string;
        at: Date;
        operation: string;
        status: number;
        event_id: string;
        request_id: string;
        duration_ms: number;
      }[]
    >('record_id', 'at', 'operation', 'status', 'event_id', 'request_id', 'duration_ms');
  const page = rows.slice(0, o.limit);
  const last = page.at(-1);
  return {
    requests: page.map((r) => ({
      at: r.at.toISOString(),
      operation: r.operation,
      status: r.status,
      event_id: r.event_id || null,
      request_id: r.request_id,
      duration_ms: r.duration_ms,
    })),
    nextCursor:
      rows.length > o.limit && last ? encodeCursor({ at: last.at.getTime(), id: last.record_id }) : null,
  };
}
