import { randomUUID } from 'node:crypto';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { createLogger } from '@mds/logging';
import { createRetention } from '@mds/personal-data';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrations } from './migrations.js';
import { retentionRules } from './personal-data.js';

const DAY = 86_400_000;
let schema: TestSchema;

beforeAll(async () => {
  schema = await migratedTestSchema('dispatcher_retention', migrations);
});
afterAll(() => schema?.drop());

it('removes notifications finished longer ago than the retention, keeps recent and pending ones', async () => {
  const { db } = schema;
  const row = (status: string, finishedDaysAgo: number | null, createdDaysAgo: number) => ({
    webhook_id: `msg_${randomUUID().replaceAll('-', '')}`,
    source_event_id: randomUUID(),
    company_id: randomUUID(),
    kind: 'message.status',
    subject_id: randomUUID(),
    body: '{}',
    status,
    created_at: new Date(Date.now() - createdDaysAgo * DAY),
    finished_at: finishedDaysAgo === null ? null : new Date(Date.now() - finishedDaysAgo * DAY),
  });
  const old = [row('delivered', 40, 41), row('failed', 31, 35)];
  const kept = [row('delivered', 5, 6), row('pending', null, 60)];
  await db('deliveries').insert([...old, ...kept]);
  // A request's metadata kept for its outcome ages out a week after the deliveries would.
  const metadataRow = (daysAgo: number) => ({
    request_id: randomUUID(),
    company_id: randomUUID(),
    metadata: '{"order_id":"42"}',
    recorded_at: new Date(Date.now() - daysAgo * DAY),
  });
  const recentMetadata = metadataRow(36);
  await db('request_metadata').insert([metadataRow(38), recentMetadata]);
  const retention = createRetention({
    db,
    logger: createLogger({ service: 'retention-test', level: 'silent' }),
    rules: retentionRules(30),
  });
  expect(await retention.runOnce()).toEqual({
    deliveries: 2,
    personal_data_subjects: 0,
    request_metadata: 1,
  });
  const left = await db('deliveries').pluck('webhook_id');
  expect(left.sort()).toEqual(kept.map((r) => r.webhook_id).sort());
  expect(await db('request_metadata').pluck('request_id')).toEqual([recentMetadata.request_id]);
});
