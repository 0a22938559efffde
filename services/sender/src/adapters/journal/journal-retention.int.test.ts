import { randomUUID } from 'node:crypto';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { createLogger } from '@mds/logging';
import { createRetention } from '@mds/personal-data';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { journalMigrations, journalRetentionRule } from './journal.js';

const DAY = 86_400_000;
let schema: TestSchema;

beforeAll(async () => {
  schema = await migratedTestSchema('journal_retention', journalMigrations);
});
afterAll(() => schema?.drop());

it('forgets finished deliveries past the retention, keeps open work, recent ones and unpublished parked outcomes', async () => {
  const { db } = schema;
  const row = (o: { status: string; finishedDaysAgo?: number; spilled?: boolean; published?: boolean }) => ({
    message_id: randomUUID(),
    bot_id: 'bot',
    kafka_partition: 0,
    request: Buffer.from('sealed request'),
    deliver_before: new Date(),
    status: o.status,
    spilled: o.spilled ?? false,
    published: o.published ?? false,
    finished_at: o.finishedDaysAgo === undefined ? null : new Date(Date.now() - o.finishedDaysAgo * DAY),
  });
  const gone = [
    row({ status: 'sent', finishedDaysAgo: 20 }),
    row({ status: 'failed', finishedDaysAgo: 30, spilled: true, published: true }),
  ];
  const kept = [
    row({ status: 'pending' }),
    row({ status: 'sent', finishedDaysAgo: 2 }),
    row({ status: 'sent', finishedDaysAgo: 20, spilled: true, published: false }),
  ];
  await db('deliveries').insert([...gone, ...kept]);
  const retention = createRetention({
    db,
    logger: createLogger({ service: 'retention-test', level: 'silent' }),
    rules: [journalRetentionRule(14)],
  });
  expect(await retention.runOnce()).toEqual({ deliveries: 2 });
  expect((await db('deliveries').pluck('message_id')).sort()).toEqual(kept.map((r) => r.message_id).sort());
});
