import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { createTestDatabase } from '@mds/local-infra/testing';
import { migrations, SCHEMA } from './migrations.js';
import { newEvent, topics, type WebhookEvent } from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';
import {
  createDeliveryStore,
  type ClaimedDelivery,
  type Completion,
  type DeliveryStore,
  type NewDelivery,
} from './store.js';

let db: Knex;

beforeAll(async () => {
  db = await openDatabase({ url: await createTestDatabase('whstore'), schema: SCHEMA });
  await migrateUp(db, SCHEMA, migrations);
});

afterAll(async () => {
  await db?.destroy();
});

const delivery = (createdAt: Date): NewDelivery => {
  const id = randomUUID();
  return {
    webhookId: `msg_${id.replaceAll('-', '')}`,
    sourceEventId: id,
    companyId: randomUUID(),
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
    await store.ingest([later]);
    expect(await store.oldestDue(now)).toBeNull();

    const old = delivery(new Date('2026-11-21T11:50:00.000Z'));
    const older = delivery(new Date('2026-11-21T11:40:00.000Z'));
    await store.ingest([old, older]);
    expect(await store.oldestDue(now)).toEqual(new Date('2026-11-21T11:40:00.000Z'));

    await db('deliveries').where({ webhook_id: older.webhookId }).update({ status: 'delivered' });
    expect(await store.oldestDue(now)).toEqual(new Date('2026-11-21T11:50:00.000Z'));
  });
});

describe('storing attempt results (one statement)', () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 21, 12, minute));
  const delivered = (webhookId: string, n: number): OutgoingEvent => ({
    topic: topics.webhook,
    key: webhookId,
    record: newEvent<WebhookEvent>({
      eventId: randomUUID(),
      occurredAt: at(0),
      companyId: 'c',
      streamId: webhookId,
      producer: 'test',
      event: { $case: 'webhookDelivered', value: { kind: 'message.status', subjectId: 's', attempts: n } },
    }),
  });
  const completion = (claim: ClaimedDelivery, ok: boolean, minute: number): Completion => ({
    claim,
    update: {
      status: ok ? 'delivered' : 'pending',
      attempts: claim.attempts + 1,
      nextAttemptAt: ok ? null : at(minute + 30),
      lastStatusCode: ok ? 200 : 500,
      lastError: ok ? null : 'HTTP 500',
      finishedAt: ok ? at(minute) : null,
    },
    attempt: {
      webhookId: claim.webhookId,
      attempt: claim.attempts + 1,
      trigger: 'scheduled',
      url: 'https://example.com/hook',
      statusCode: ok ? 200 : 500,
      latencyMs: 3,
      outcome: ok ? 'succeeded' : 'retryable',
      error: ok ? null : 'HTTP 500',
      responseExcerpt: '',
      nextAttemptAt: ok ? null : at(minute + 30),
      attemptedAt: at(minute),
    },
    events: [delivered(claim.webhookId, 1), delivered(claim.webhookId, 2)],
    health: { succeeded: ok, at: at(minute) },
  });
  const claimAll = async (store: DeliveryStore, company: string, count: number) => {
    const mine = Array.from({ length: count }, () => ({ ...delivery(at(0)), companyId: company }));
    await store.ingest(mine);
    const claimed = await store.claim({
      now: at(1),
      limit: 1_000,
      leaseSeconds: 60,
      fullCompanies: [],
      freeSlots: () => 1_000,
      defaultSlots: 1_000,
      busyCompanies: [],
    });
    return mine.map((d) => claimed.find((c) => c.webhookId === d.webhookId)!);
  };

  it('stores rows still leased to it with their attempts, events in order and failure clocks; skips the rest', async () => {
    const store = createDeliveryStore(db);
    const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const [a1, a2, a3, a4] = await claimAll(store, a, 4);
    const [b1] = await claimAll(store, b, 1);
    const [c1, c2] = await claimAll(store, c, 2);
    const [d1] = await claimAll(store, d, 1);
    // b failed before (kept), c failed before (reset by a success), d is new and only succeeds.
    await db('endpoint_health').insert([
      { company_id: b, failing_since: at(-60), updated_at: at(-1) },
      { company_id: c, failing_since: at(-60), updated_at: at(-1) },
    ]);
    const lost = { ...a4!, leaseId: randomUUID() }; // another worker's lease now

    const batch = [
      completion(a1!, false, 2),
      completion(a2!, true, 3),
      completion(a3!, false, 4),
      completion(lost, false, 1),
      completion(b1!, false, 5),
      completion(c1!, false, 6),
      completion(c2!, true, 7),
      completion(d1!, true, 8),
    ];
    const { stored, failingSince } = await store.complete(batch);

    expect(stored.map((s) => s.claim.webhookId)).toEqual(
      batch.filter((s) => s.claim !== lost).map((s) => s.claim.webhookId),
    );
    expect(Object.fromEntries(failingSince)).toEqual({ [a]: at(4), [b]: at(-60) });
    const health = await db('endpoint_health')
      .whereIn('company_id', [a, b, c, d])
      .orderBy('updated_at')
      .select<{ company_id: string; failing_since: Date | null; updated_at: Date }[]>();
    expect(health.map((h) => [h.company_id, h.failing_since, h.updated_at])).toEqual([
      [a, at(4), at(4)],
      [b, at(-60), at(5)],
      [c, null, at(7)],
      [d, null, at(8)],
    ]);

    const ids = stored.map((s) => s.claim.webhookId);
    const rows = await db('deliveries')
      .whereIn('webhook_id', [...ids, lost.webhookId])
      .select<Record<string, unknown>[]>();
    const row = (id: string) => rows.find((r) => r.webhook_id === id)!;
    expect(row(a2!.webhookId)).toMatchObject({ status: 'delivered', attempts: 1, lease_id: null });
    expect(row(a1!.webhookId)).toMatchObject({ status: 'pending', last_error: 'HTTP 500', lease_id: null });
    expect(row(lost.webhookId)).toMatchObject({ status: 'pending', attempts: 0, lease_id: a4!.leaseId });

    const attempts = await db('attempts')
      .whereIn('webhook_id', [...ids, lost.webhookId])
      .orderBy('id')
      .select<{ webhook_id: string; status_code: number; attempted_at: Date }[]>();
    expect(attempts.map((r) => [r.webhook_id, r.status_code, r.attempted_at])).toEqual(
      stored.map((s) => [s.claim.webhookId, s.attempt!.statusCode, s.attempt!.attemptedAt]),
    );
    const outbox = await db('outbox')
      .whereIn('key', [...ids, lost.webhookId])
      .orderBy('id')
      .select<{ key: string; payload: Buffer }[]>();
    expect(
      outbox.map((r) => {
        const record = topics.webhook.codec.decode(r.payload);
        return [r.key, record.event.$case === 'webhookDelivered' ? record.event.value.attempts : 0];
      }),
    ).toEqual(
      stored.flatMap((s) => [
        [s.claim.webhookId, 1],
        [s.claim.webhookId, 2],
      ]),
    );
  });

  it('stores nothing for an empty batch', async () => {
    expect(await createDeliveryStore(db).complete([])).toEqual({ stored: [], failingSince: new Map() });
  });
});
