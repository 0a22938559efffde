import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { createTestDatabase } from '@mds/local-infra/testing';
import { webhookIdOf } from '../../domain/notifications.js';
import { migrations, SCHEMA } from './migrations.js';
import { createDeliveryStore } from './store.js';

// The upgrade to deliveries per endpoint, from the schema of the version before (with rows in it): every row and
// failure clock becomes ep_default's and keeps working; a replay of an old notification is still dropped.

let db: Knex;
const BEFORE_ENDPOINTS = migrations.findIndex((m) => m.name === '0006_deliveries_per_endpoint');

beforeAll(async () => {
  db = await openDatabase({ url: await createTestDatabase('whmig'), schema: SCHEMA });
  await migrateUp(db, SCHEMA, migrations.slice(0, BEFORE_ENDPOINTS));
});

afterAll(async () => {
  await db?.destroy();
});

describe('the upgrade to deliveries per endpoint', () => {
  it("makes today's deliveries and failure clocks ep_default's, and they go on working", async () => {
    expect(BEFORE_ENDPOINTS).toBeGreaterThan(0);
    const companyId = randomUUID();
    const [due, failed] = [randomUUID(), randomUUID()];
    const at = new Date('2026-11-21T10:00:00.000Z');
    const row = (sourceEventId: string, status: string) => ({
      webhook_id: webhookIdOf(sourceEventId),
      source_event_id: sourceEventId,
      company_id: companyId,
      kind: 'message.status',
      subject_id: randomUUID(),
      body: '{"type":"message.status"}',
      status,
      attempts: status === 'failed' ? 8 : 1,
      next_attempt_at: status === 'failed' ? null : at,
      created_at: at,
      finished_at: status === 'failed' ? at : null,
    });
    await db('deliveries').insert([row(due, 'pending'), row(failed, 'failed')]);
    const failingSince = new Date('2026-11-20T10:00:00.000Z');
    await db('endpoint_health').insert({
      company_id: companyId,
      failing_since: failingSince,
      updated_at: at,
    });

    await migrateUp(db, SCHEMA, migrations);

    const rows = await db('deliveries').where({ company_id: companyId }).orderBy('status', 'desc');
    expect(rows.map((r: { endpoint_id: string }) => r.endpoint_id)).toEqual(['ep_default', 'ep_default']);
    const store = createDeliveryStore(db);
    // A replay of the old notification to ep_default (same webhook-id derivation) is dropped.
    const replay = {
      webhookId: webhookIdOf(due),
      sourceEventId: due,
      companyId,
      endpointId: 'ep_default',
      kind: 'message.status',
      subjectId: randomUUID(),
      body: '{}',
      createdAt: at,
    };
    expect(await store.ingest([{ delivery: replay, state: { kind: 'pending' } }], lease())).toEqual(
      new Set(),
    );
    // ... while the same event for a new endpoint is a delivery of its own.
    const other = {
      ...replay,
      webhookId: webhookIdOf(due, 'ep_0123456789abcdefABCDEF'),
      endpointId: 'ep_0123456789abcdefABCDEF',
    };
    expect(await store.ingest([{ delivery: other, state: { kind: 'pending' } }], lease())).toEqual(
      new Set([other.webhookId]),
    );
    // The old pending row is claimed as ep_default's; the old failed one is recovered as ep_default's.
    const claimed = await store.claim({
      now: new Date('2026-11-21T10:00:01.000Z'),
      limit: 10,
      leaseId: randomUUID(),
      leaseSeconds: 60,
      fullEndpoints: [{ companyId, endpointId: 'ep_0123456789abcdefABCDEF' }],
      freeSlots: [],
      defaultSlots: 5,
    });
    expect(claimed.map((c) => [c.webhookId, c.endpointId])).toEqual([[webhookIdOf(due), 'ep_default']]);
    expect(await store.recover(companyId, ['ep_default'], failingSince, at, at)).toBe(1);
    // The old failure clock is ep_default's and keeps running; a new endpoint's clock is its own.
    const clocks = await store.moveFailureClocks([
      { companyId, endpointId: 'ep_default', reset: false, since: at, at },
      { companyId, endpointId: 'ep_0123456789abcdefABCDEF', reset: false, since: at, at },
    ]);
    expect(clocks.get(`${companyId}/ep_default`)).toEqual(failingSince);
    expect(clocks.get(`${companyId}/ep_0123456789abcdefABCDEF`)).toEqual(at);
  });
});

const lease = () => ({ leaseId: randomUUID(), seconds: 60 });
