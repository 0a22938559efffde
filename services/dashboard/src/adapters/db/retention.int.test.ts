import { randomUUID } from 'node:crypto';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { createLogger } from '@mds/logging';
import { createRetention } from '@mds/personal-data';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrations } from './migrations.js';
import { auditLogRetention } from './personal-data.js';

const DAY = 86_400_000;
let schema: TestSchema;

beforeAll(async () => {
  schema = await migratedTestSchema('dashboard_retention', migrations);
});
afterAll(() => schema?.drop());

it("removes audit entries older than the retention, and keeps recent ones and every key's creator", async () => {
  const { db } = schema;
  const company = randomUUID();
  const entry = (action: string, daysAgo: number) => ({
    company_id: company,
    member_id: randomUUID(),
    action,
    target: randomUUID(),
    at: new Date(Date.now() - daysAgo * DAY),
  });
  const old = [entry('webhook.url', 400), entry('message.sent', 366)];
  const kept = [entry('message.sent', 10), entry('api_key.created', 900)];
  await db('audit_log').insert([...old, ...kept]);
  const retention = createRetention({
    db,
    logger: createLogger({ service: 'retention-test', level: 'silent' }),
    rules: auditLogRetention(365),
  });
  expect(await retention.runOnce()).toEqual({ audit_log: 2 });
  expect((await db('audit_log').pluck('target')).sort()).toEqual(kept.map((e) => e.target).sort());
});
