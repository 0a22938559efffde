// The deliveries page's queries on real PostgreSQL: every status at once, newest first and paged without gaps;
// filters by endpoint, type and event id; counts per status capped (a company's whole history is never
// counted on a refresh); another company's rows never in the answer.
import { randomUUID } from 'node:crypto';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DELIVERY_COUNT_CAP, deliveryCounts, listDeliveries } from './delivery-queries.js';
import { migrations } from './migrations.js';

let schema: TestSchema;
const company = randomUUID();
const other = randomUUID();
const message = randomUUID();
const base = Date.parse('2026-11-20T10:00:00Z');

beforeAll(async () => {
  schema = await migratedTestSchema('dashboard_deliveries', migrations);
  const { db } = schema;
  // Past the cap: delivered notifications of a long history, one a second, all about other messages.
  await db.raw(
    `insert into webhook_deliveries (webhook_id, company_id, endpoint_id, subject_id, kind, status, attempts,
       last_attempt_at)
     select 'msg_' || lpad(to_hex(i), 32, '0'), ?, 'ep_default', gen_random_uuid()::text, 'message.status',
       'delivered', 1, ?::timestamptz + i * interval '1 second'
     from generate_series(1, ?) as i`,
    [company, new Date(base).toISOString(), DELIVERY_COUNT_CAP + 1],
  );
  const row = (o: {
    id: string;
    companyId?: string;
    status: string;
    kind?: string;
    subject?: string;
    at: number;
  }) => ({
    webhook_id: `msg_${o.id.padStart(32, 'f')}`,
    company_id: o.companyId ?? company,
    endpoint_id: 'ep_default',
    subject_id: o.subject ?? randomUUID(),
    kind: o.kind ?? 'message.status',
    status: o.status,
    attempts: 2,
    last_attempt_at: new Date(base + o.at),
  });
  await db('webhook_deliveries').insert([
    row({ id: 'a1', status: 'pending', subject: message, at: 100_000_000 }),
    row({ id: 'a2', status: 'failed', kind: 'client.check', at: 100_000_001 }),
    row({ id: 'a3', status: 'failed', kind: 'client.phone_changed', at: 100_000_002 }),
    row({ id: 'b1', companyId: other, status: 'failed', at: 100_000_003 }),
  ]);
  await db('messages').insert({
    message_id: message,
    company_id: company,
    state: 'sent',
    phone: '79161234567',
    sort_at: new Date(base),
    webhook_attempts: 2,
  });
}, 60_000);
afterAll(() => schema?.drop());

describe('the deliveries queries', () => {
  it('count each status up to the cap, under the same filters, within the company', async () => {
    expect(await deliveryCounts(schema.db, company, {})).toEqual({
      delivered: { count: DELIVERY_COUNT_CAP, capped: true },
      pending: { count: 1, capped: false },
      failed: { count: 2, capped: false },
    });
    expect(await deliveryCounts(schema.db, company, { kind: 'client.check' })).toEqual({
      delivered: { count: 0, capped: false },
      pending: { count: 0, capped: false },
      failed: { count: 1, capped: false },
    });
    expect(await deliveryCounts(schema.db, company, { subjectId: message.toUpperCase() })).toMatchObject({
      pending: { count: 1 },
      failed: { count: 0 },
      delivered: { count: 0 },
    });
    expect(await deliveryCounts(schema.db, other, { endpointId: 'ep_default' })).toMatchObject({
      failed: { count: 1 },
      delivered: { count: 0 },
    });
  });

  it('list every status newest first, with the message each is about, and page without gaps or repeats', async () => {
    const first = await listDeliveries(schema.db, company, { limit: 4 });
    expect(first.deliveries.map((d) => d.webhook_id.slice(-2))).toEqual([
      'a3',
      'a2',
      'a1',
      expect.any(String),
    ]);
    expect(first.deliveries.map((d) => d.status).slice(0, 3)).toEqual(['failed', 'failed', 'pending']);
    expect(first.deliveries[2]!.subject).toEqual({ phone: '79161234567', state: 'sent' });
    // About a client check, or a message the log does not hold: nothing to name it by but its id.
    expect(first.deliveries[0]!.subject).toBeNull();
    expect(first.deliveries[3]!.subject).toBeNull();
    const seen = new Set(first.deliveries.map((d) => d.webhook_id));
    let cursor = first.nextCursor;
    for (let page = 0; page < 3 && cursor; page++) {
      const next = await listDeliveries(schema.db, company, { limit: 4, cursor });
      for (const d of next.deliveries) {
        expect(seen.has(d.webhook_id)).toBe(false);
        seen.add(d.webhook_id);
      }
      cursor = next.nextCursor;
    }
    expect(seen.size).toBe(16);
    const newest = [...seen]
      .filter((id) => id.startsWith('msg_0'))
      .sort()
      .reverse();
    // The delivered ones follow in time order: the newest of the history right after the three above.
    expect(newest[0]).toBe(`msg_${(DELIVERY_COUNT_CAP + 1).toString(16).padStart(32, '0')}`);
  });

  it('filter by status, type and event id, and never answer another company', async () => {
    const failed = await listDeliveries(schema.db, company, { status: 'failed', limit: 10 });
    expect(failed.deliveries.map((d) => d.kind)).toEqual(['client.phone_changed', 'client.check']);
    const phoneChanges = await listDeliveries(schema.db, company, {
      kind: 'client.phone_changed',
      limit: 10,
    });
    expect(phoneChanges.deliveries).toHaveLength(1);
    const about = await listDeliveries(schema.db, company, { subjectId: message, limit: 10 });
    expect(about.deliveries.map((d) => d.webhook_id.slice(-2))).toEqual(['a1']);
    const theirs = await listDeliveries(schema.db, other, { limit: 10 });
    expect(theirs.deliveries.map((d) => d.webhook_id.slice(-2))).toEqual(['b1']);
    expect((await listDeliveries(schema.db, other, { subjectId: message, limit: 10 })).deliveries).toEqual(
      [],
    );
  });
});
