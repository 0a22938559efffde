// The read models' upgrade to webhook endpoints (issue 36), on real PostgreSQL: rows folded before endpoints
// had ids become the legacy endpoint's, nothing is lost, and the fold keeps each endpoint's attempts apart.
import { randomBytes, randomUUID } from 'node:crypto';
import { migrateDown, migrateUp } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { ProjectedEvent, WebhookAttemptOutcome } from '../../domain/projection.js';
import { migrations } from './migrations.js';
import { applyProjected } from './projection-store.js';
import { endpointHealth, listDeliveries } from './queries.js';

let schema: TestSchema;
const before = migrations.filter((m) => m.name < '0008_webhook_endpoints');
// Up to this upgrade only: later migrations have tests of their own.
const through = migrations.filter((m) => m.name <= '0008_webhook_endpoints');

beforeAll(async () => {
  schema = await migratedTestSchema('dashboard_endpoints', before);
});
afterAll(() => schema?.drop());

const company = randomUUID();
const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 5 * 60_000);

function attempt(o: {
  endpointId: string;
  webhookId?: string;
  outcome: WebhookAttemptOutcome;
  at: Date;
  statusCode?: number;
  error?: string;
}): ProjectedEvent {
  const subjectId = randomUUID();
  return {
    eventId: randomUUID(),
    companyId: company,
    subjectId,
    type: 'WebhookAttempted',
    at: o.at,
    producer: 'webhook-dispatcher',
    timeline: true,
    data: {},
    change: {
      kind: 'webhook-attempt',
      webhookId: o.webhookId ?? `msg_${randomBytes(16).toString('hex')}`,
      endpointId: o.endpointId,
      webhookKind: 'message.status',
      attempt: 1,
      outcome: o.outcome,
      statusCode: o.statusCode ?? (o.outcome === 'succeeded' ? 200 : 500),
      error: o.error ?? '',
      url: 'https://hooks.example/mds',
      nextAttemptAt: null,
    },
  };
}

it("upgrades today's deliveries and counts to the legacy endpoint ep_default, then keeps each endpoint's apart", async () => {
  const { db } = schema;
  // Today's tables, as the version before endpoints left them.
  await db('webhook_deliveries').insert({
    webhook_id: 'msg_legacy',
    company_id: company,
    subject_id: randomUUID(),
    kind: 'message.status',
    status: 'failed',
    attempts: 3,
    last_status_code: 500,
    url: 'https://hooks.example/mds',
    last_attempt_at: minute,
  });
  await db('webhook_minutes').insert([
    { company_id: company, minute, outcome: 'succeeded', count: 7 },
    { company_id: company, minute, outcome: 'retryable', count: 3 },
  ]);

  expect(await migrateUp(db, schema.schema, through)).toEqual(['0008_webhook_endpoints']);
  const legacy = await listDeliveries(db, company, { status: 'failed', endpointId: 'ep_default', limit: 10 });
  expect(legacy.deliveries.map((d) => [d.webhook_id, d.endpoint_id])).toEqual([['msg_legacy', 'ep_default']]);
  const now = new Date(minute.getTime() + 10 * 60_000);
  expect((await endpointHealth(db, company, now)).get('ep_default')).toMatchObject({
    attempts_24h: 10,
    succeeded_24h: 7,
    success_rate_24h: 0.7,
    last_failure: null,
  });

  // New attempts, to the legacy endpoint and to a new one, in the same minute: counted per endpoint.
  const other = 'ep_0123456789abcdefABCDEF';
  const t = (s: number) => new Date(minute.getTime() + s * 1000);
  await applyProjected(db, [
    attempt({ endpointId: 'ep_default', outcome: 'succeeded', at: t(1) }),
    attempt({ endpointId: other, outcome: 'retryable', at: t(2), statusCode: 503, error: 'HTTP 503' }),
    attempt({ endpointId: other, outcome: 'gone', at: t(4), statusCode: 410, error: 'HTTP 410' }),
    attempt({ endpointId: other, outcome: 'retryable', at: t(3), statusCode: 500 }),
    attempt({ endpointId: other, outcome: 'succeeded', at: t(5) }),
  ]);
  const health = await endpointHealth(db, company, now);
  expect(health.get('ep_default')).toMatchObject({ attempts_24h: 11, succeeded_24h: 8 });
  expect(health.get(other)).toMatchObject({
    attempts_24h: 4,
    succeeded_24h: 1,
    success_rate_24h: 0.25,
    // The latest failure, not the latest in the batch's order; a later success leaves it shown.
    last_failure: { at: t(4), outcome: 'gone', status_code: 410, error: 'HTTP 410' },
  });
  // An older failure read later (another partition) does not replace it.
  await applyProjected(db, [attempt({ endpointId: other, outcome: 'retryable', at: t(0), statusCode: 502 })]);
  expect((await endpointHealth(db, company, now)).get(other)?.last_failure?.status_code).toBe(410);
  // Older than 24 hours: not in the rate.
  expect(
    (await endpointHealth(db, company, new Date(now.getTime() + 25 * 3_600_000))).get(other),
  ).toMatchObject({
    attempts_24h: 0,
    success_rate_24h: null,
  });
  const delivered = await listDeliveries(db, company, { status: 'delivered', endpointId: other, limit: 10 });
  expect(delivered.deliveries.map((d) => d.endpoint_id)).toEqual([other]);

  // Back down: every endpoint's counts summed into the company's, as before endpoints.
  expect(await migrateDown(db, schema.schema, through)).toEqual(['0008_webhook_endpoints']);
  const summed = await db('webhook_minutes')
    .where({ company_id: company })
    .groupBy('outcome')
    .select('outcome', db.raw('sum(count)::int as count'));
  expect(
    Object.fromEntries(summed.map((r: { outcome: string; count: number }) => [r.outcome, r.count])),
  ).toEqual({ succeeded: 9, retryable: 6, gone: 1 });
  expect(await migrateUp(db, schema.schema, through)).toEqual(['0008_webhook_endpoints']);
});
