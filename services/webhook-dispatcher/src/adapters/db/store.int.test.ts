import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { createTestDatabase } from '@mds/local-infra/testing';
import { migrations, SCHEMA } from './migrations.js';
import type { Arrival, ClaimedDelivery, Completion, NewDelivery } from '../../application/ports.js';
import { createDeliveryStore, type DeliveryRecords as DeliveryStore } from './store.js';

let db: Knex;

beforeAll(async () => {
  db = await openDatabase({ url: await createTestDatabase('whstore'), schema: SCHEMA });
  await migrateUp(db, SCHEMA, migrations);
});

afterAll(async () => {
  await db?.destroy();
});

const lease = () => ({ leaseId: randomUUID(), seconds: 60 });
const pending = (d: NewDelivery): Arrival => ({ delivery: d, state: { kind: 'pending' } });

const delivery = (createdAt: Date): NewDelivery => {
  const id = randomUUID();
  return {
    webhookId: `msg_${id.replaceAll('-', '')}`,
    sourceEventId: id,
    companyId: randomUUID(),
    endpointId: 'ep_default',
    kind: 'message.status',
    subjectId: id,
    body: '{}',
    createdAt,
  };
};

describe('the oldest due delivery (mds_webhook_oldest_due_seconds)', () => {
  it('is the earliest pending delivery due by now; later, finished and none count for nothing', async () => {
    const store = createDeliveryStore(db);
    const now = new Date('2026-11-21T12:00:00.000Z');
    expect(await store.oldestDue(now)).toBeNull();

    const later = delivery(new Date('2026-11-21T12:05:00.000Z'));
    await store.ingest([pending(later)], lease());
    expect(await store.oldestDue(now)).toBeNull();

    const old = delivery(new Date('2026-11-21T11:50:00.000Z'));
    const older = delivery(new Date('2026-11-21T11:40:00.000Z'));
    await store.ingest([pending(old), pending(older)], lease());
    expect(await store.oldestDue(now)).toEqual(new Date('2026-11-21T11:40:00.000Z'));

    await db('deliveries').where({ webhook_id: older.webhookId }).update({ status: 'delivered' });
    expect(await store.oldestDue(now)).toEqual(new Date('2026-11-21T11:50:00.000Z'));

    // One a worker holds is being attempted, not waiting.
    const leasedOne = delivery(new Date('2026-11-21T11:30:00.000Z'));
    await store.ingest([{ delivery: leasedOne, state: { kind: 'leased' } }], lease());
    expect(await store.oldestDue(now)).toEqual(new Date('2026-11-21T11:50:00.000Z'));
  });
});

describe('storing attempt results (one statement)', () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 21, 12, minute));
  const completion = (claim: ClaimedDelivery, ok: boolean, minute: number, excerpt = ''): Completion => ({
    claim,
    update: {
      status: ok ? 'delivered' : 'pending',
      attempts: claim.attempts + 1,
      nextAttemptAt: ok ? null : at(minute + 30),
      lastStatusCode: ok ? 200 : 500,
      lastError: ok ? null : 'HTTP 500',
      finishedAt: ok ? at(minute) : null,
      manual: false,
    },
    attempt: {
      attempt: claim.attempts + 1,
      trigger: 'scheduled',
      url: 'https://example.com/hook',
      statusCode: ok ? 200 : 500,
      latencyMs: 3,
      outcome: ok ? 'succeeded' : 'retryable',
      error: ok ? null : 'HTTP 500',
      responseExcerpt: excerpt,
      nextAttemptAt: ok ? null : at(minute + 30),
      attemptedAt: at(minute),
    },
    events: [],
  });
  const leased = async (store: DeliveryStore, count: number) => {
    const mine = Array.from({ length: count }, () => delivery(at(0)));
    const leaseId = randomUUID();
    const stored = await store.ingest(
      mine.map((d) => ({ delivery: d, state: { kind: 'leased' } })),
      { leaseId, seconds: 60 },
    );
    expect(stored.size).toBe(count);
    return mine.map((d): ClaimedDelivery => ({ ...d, leaseId, attempts: 0, manual: false }));
  };

  it('stores rows still leased to it, each attempt appended to its log; skips the rest', async () => {
    const store = createDeliveryStore(db);
    const [a, b, c] = await leased(store, 3);
    const lost = { ...c!, leaseId: randomUUID() }; // another worker's lease now
    const stored = await store.complete([
      completion(a!, false, 1),
      completion(b!, true, 2),
      completion(lost, true, 3),
    ]);
    expect(stored).toEqual(new Set([a!.webhookId, b!.webhookId]));
    const again = await store.complete([completion({ ...a!, attempts: 1 }, true, 35)]);
    // Its lease was given back with the first result: a second result needs a new claim.
    expect(again.size).toBe(0);

    const [rowA] = await store.find(a!.webhookId);
    expect(rowA).toMatchObject({ status: 'pending', attempts: 1, last_error: 'HTTP 500' });
    expect(rowA!.attempt_log).toEqual([
      expect.objectContaining({ attempt: 1, status_code: 500, attempted_at: at(1).toISOString() }),
    ]);
    const [rowC] = await store.find(c!.webhookId);
    expect(rowC).toMatchObject({ status: 'pending', attempts: 0, attempt_log: [] });
  });

  it('stores an answer holding NUL bytes or broken text, as text PostgreSQL can hold, whoever handed it in', async () => {
    const store = createDeliveryStore(db);
    const [a, b] = await leased(store, 2);
    const stored = await store.complete([
      completion(a!, false, 1, 'boom\u0000 \ud800 \u001b end'),
      completion(b!, false, 2, 'ok \ud83d\ude00'),
    ]);
    expect(stored.size).toBe(2);
    const [row] = await store.find(a!.webhookId);
    expect(row!.attempt_log[0]!.response_excerpt).toBe('boom\ufffd \ufffd \ufffd end');
    expect((await store.find(b!.webhookId))[0]!.attempt_log[0]!.response_excerpt).toBe('ok \ud83d\ude00');
  });

  it('stores a delivery attempted already once, with its result and attempt log', async () => {
    const store = createDeliveryStore(db);
    const d = delivery(at(0));
    const claim: ClaimedDelivery = { ...d, leaseId: 'x', attempts: 0, manual: false };
    const stored = await store.ingest(
      [{ delivery: d, state: { kind: 'done', completion: completion(claim, true, 1) } }],
      lease(),
    );
    expect(stored).toEqual(new Set([d.webhookId]));
    const [row] = await store.find(d.webhookId);
    expect(row).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200 });
    expect(row!.attempt_log).toEqual([expect.objectContaining({ attempt: 1, status_code: 200 })]);
    // Came again (a restart): stored before, so nothing new.
    expect(await store.stored([d.sourceEventId, randomUUID()])).toEqual(new Set([d.sourceEventId]));
    expect(await store.ingest([pending(d)], lease())).toEqual(new Set());
  });

  it('stores nothing for an empty batch', async () => {
    expect(await createDeliveryStore(db).complete([])).toEqual(new Set());
  });
});

describe('failure clocks', () => {
  it('start at a failure, keep running through later failures, and a success in the results resets them; per endpoint', async () => {
    const store = createDeliveryStore(db);
    const at = (minute: number) => new Date(Date.UTC(2026, 10, 21, 13, minute));
    const company = randomUUID();
    const a = { companyId: company, endpointId: 'ep_default' };
    const b = { companyId: company, endpointId: 'ep_0123456789abcdefABCDEF' };
    const [keyA, keyB] = [`${company}/ep_default`, `${company}/ep_0123456789abcdefABCDEF`];
    const clocks = await store.moveFailureClocks([
      { ...a, reset: false, since: at(1), at: at(1) },
      { ...b, reset: true, since: null, at: at(1) },
    ]);
    expect(Object.fromEntries(clocks)).toEqual({ [keyA]: at(1), [keyB]: null });
    const later = await store.moveFailureClocks([
      { ...a, reset: false, since: at(5), at: at(5) },
      { ...b, reset: false, since: at(6), at: at(6) },
    ]);
    expect(Object.fromEntries(later)).toEqual({ [keyA]: at(1), [keyB]: at(6) });
    const reset = await store.moveFailureClocks([{ ...a, reset: true, since: at(9), at: at(9) }]);
    expect(Object.fromEntries(reset)).toEqual({ [keyA]: at(9) });
  });
});

describe('deliveries per endpoint', () => {
  it('store one row per endpoint of a notification, drop a replay of each, and claim within each endpoint', async () => {
    const store = createDeliveryStore(db);
    const createdAt = new Date('2026-11-21T11:00:00.000Z');
    const base = delivery(createdAt);
    const other = { ...base, webhookId: `${base.webhookId.slice(0, -4)}beef`, endpointId: 'ep_other' };
    const stored = await store.ingest([pending(base), pending(other)], lease());
    expect(stored).toEqual(new Set([base.webhookId, other.webhookId]));
    expect(await store.ingest([pending(base), pending(other)], lease())).toEqual(new Set());
    expect(await store.stored([base.sourceEventId])).toEqual(new Set([base.sourceEventId]));
    // ep_default is full here, ep_other has a slot: only ep_other's row is taken.
    const claimed = await store.claim({
      now: new Date('2026-11-21T11:00:01.000Z'),
      limit: 10,
      leaseId: randomUUID(),
      leaseSeconds: 60,
      fullEndpoints: [{ companyId: base.companyId, endpointId: 'ep_default' }],
      freeSlots: [{ companyId: base.companyId, endpointId: 'ep_other', free: 1 }],
      defaultSlots: 5,
    });
    expect(claimed.map((c) => [c.webhookId, c.endpointId])).toEqual([[other.webhookId, 'ep_other']]);
    const [found] = await store.find(base.webhookId);
    expect(found!.endpoint_id).toBe('ep_default');
  });
});
