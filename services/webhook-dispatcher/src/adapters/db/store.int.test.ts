import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { createTestDatabase } from '@mds/local-infra/testing';
import { migrations, SCHEMA } from './migrations.js';
import { createDeliveryStore, type NewDelivery } from './store.js';

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
