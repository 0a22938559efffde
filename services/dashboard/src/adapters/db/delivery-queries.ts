import type { Knex } from '@mds/db';
import { decodeCursor, encodeCursor } from '../../domain/cursor.js';

export const DELIVERY_STATUSES = ['pending', 'failed', 'delivered'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface DeliveryRow {
  webhook_id: string;
  endpoint_id: string;
  subject_id: string;
  kind: string;
  status: string;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  url: string | null;
  last_attempt_at: Date;
  next_attempt_at: Date | null;
}

/** What a delivery is about, as a person names it: for a message, the number it went to (null once forgotten). */
export interface DeliveryWithSubject extends DeliveryRow {
  subject: { phone: string | null; state: string } | null;
}

/** Which deliveries a list or its counts cover; every field narrows it. */
export interface DeliveryFilter {
  endpointId?: string | undefined;
  /** The notification type, e.g. message.status. */
  kind?: string | undefined;
  /** The event id the notification is about (the message or request). */
  subjectId?: string | undefined;
}

function filtered(db: Knex, companyId: string, f: DeliveryFilter, status?: DeliveryStatus) {
  const q = db('webhook_deliveries').where('company_id', companyId);
  if (status) q.where('status', status);
  if (f.endpointId) q.where('endpoint_id', f.endpointId);
  if (f.kind) q.where('kind', f.kind);
  if (f.subjectId) q.where('subject_id', f.subjectId.toLowerCase());
  return q;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A company's webhook notifications (in one status, or all), latest attempt first, with what each is about. */
export async function listDeliveries(
  db: Knex,
  companyId: string,
  f: DeliveryFilter & { status?: DeliveryStatus | undefined; cursor?: string | undefined; limit: number },
): Promise<{ deliveries: DeliveryWithSubject[]; nextCursor: string | null }> {
  const q = filtered(db, companyId, f, f.status);
  const cursor = f.cursor ? decodeCursor(f.cursor) : undefined;
  if (cursor) q.whereRaw('(last_attempt_at, webhook_id) < (?, ?)', [new Date(cursor.at), cursor.id]);
  const rows = await q
    .orderBy([
      { column: 'last_attempt_at', order: 'desc' },
      { column: 'webhook_id', order: 'desc' },
    ])
    .limit(f.limit + 1)
    .select<DeliveryRow[]>(
      'webhook_id',
      'endpoint_id',
      'subject_id',
      'kind',
      'status',
      'attempts',
      'last_status_code',
      'last_error',
      'url',
      'last_attempt_at',
      'next_attempt_at',
    );
  const page = rows.slice(0, f.limit);
  const last = page.at(-1);
  return {
    deliveries: await withSubjects(db, companyId, page),
    nextCursor:
      rows.length > f.limit && last
        ? encodeCursor({ at: last.last_attempt_at.getTime(), id: last.webhook_id })
        : null,
  };
}

/** The messages a page of deliveries is about, read in one query by their ids (a join would cast every id). */
async function withSubjects(
  db: Knex,
  companyId: string,
  page: DeliveryRow[],
): Promise<DeliveryWithSubject[]> {
  const ids = [
    ...new Set(
      page.filter((d) => d.kind === 'message.status' && UUID.test(d.subject_id)).map((d) => d.subject_id),
    ),
  ];
  type Subject = { message_id: string; phone: string | null; state: string };
  const messages = ids.length
    ? await db('messages')
        .where('company_id', companyId)
        .whereIn('message_id', ids)
        .select<Subject[]>('message_id', 'phone', 'state')
    : [];
  const byId = new Map(messages.map((m) => [m.message_id, { phone: m.phone, state: m.state }]));
  return page.map((d) => ({ ...d, subject: byId.get(d.subject_id) ?? null }));
}

/** Counts stop here: the tabs say "10,000+" rather than count a company's whole history on every refresh. */
export const DELIVERY_COUNT_CAP = 10_000;

/**
 * How many deliveries each status tab holds under the same filters, each counted up to the cap (an index
 * range of at most cap + 1 rows), and whether it was reached.
 */
export async function deliveryCounts(
  db: Knex,
  companyId: string,
  f: DeliveryFilter,
): Promise<Record<DeliveryStatus, { count: number; capped: boolean }>> {
  const counted = await Promise.all(
    DELIVERY_STATUSES.map(async (status) => {
      const [row] = (await db
        .from(
          filtered(db, companyId, f, status)
            .select(db.raw('1'))
            .limit(DELIVERY_COUNT_CAP + 1)
            .as('s'),
        )
        .count<{ count: string }[]>('* as count')) as { count: string }[];
      const count = Number(row?.count ?? 0);
      return [
        status,
        { count: Math.min(count, DELIVERY_COUNT_CAP), capped: count > DELIVERY_COUNT_CAP },
      ] as const;
    }),
  );
  return Object.fromEntries(counted) as Record<DeliveryStatus, { count: number; capped: boolean }>;
}

/** The webhook notification a company owns with this id, if any. */
export async function deliveryOf(
  db: Knex,
  companyId: string,
  webhookId: string,
): Promise<DeliveryRow | undefined> {
  return db('webhook_deliveries').where({ company_id: companyId, webhook_id: webhookId }).first() as Promise<
    DeliveryRow | undefined
  >;
}
