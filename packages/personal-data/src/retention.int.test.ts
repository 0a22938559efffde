import { Writable } from 'node:stream';
import { deadLettersMigration, migrateUp, openDatabase, quarantine, type Knex } from '@mds/db';
import { createTestDatabase, uniqueName } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRetention, deadLettersRule } from './retention.js';
import { rememberSubjects, subjectIndexMigration, takeSubjectRows } from './subjects.js';

const DAY = 86_400_000;
const COMPANY = '11111111-1111-4111-8111-111111111111';
let db: Knex;
const lines: string[] = [];
const logger = createLogger({
  service: 'retention-test',
  level: 'info',
  destination: new Writable({
    write(chunk: Buffer, _e, done) {
      lines.push(chunk.toString());
      done();
    },
  }),
});

beforeAll(async () => {
  const schema = uniqueName('retention').replaceAll('-', '_');
  db = await openDatabase({ url: await createTestDatabase('retention'), schema });
  await migrateUp(db, schema, [
    deadLettersMigration,
    subjectIndexMigration('0001_subjects'),
    {
      name: '0002_deliveries',
      up: (k) =>
        k.schema.createTable('deliveries', (t) => {
          t.increments('id');
          t.text('status').notNullable();
          t.timestamp('created_at', { useTz: true }).notNullable();
          t.index(['created_at']);
        }),
      down: (k) => k.schema.dropTable('deliveries'),
    },
  ]);
});
afterAll(() => db.destroy());

describe('retention', () => {
  it('removes old finished rows in bounded batches until none is left past its age, keeps recent and pending ones, and says what it removed', async () => {
    const now = Date.now();
    const rows = [
      ...Array.from({ length: 251 }, () => ({ status: 'delivered', created_at: new Date(now - 40 * DAY) })),
      { status: 'pending', created_at: new Date(now - 40 * DAY) },
      { status: 'delivered', created_at: new Date(now - 2 * DAY) },
    ];
    await db('deliveries').insert(rows);
    const registry = new Registry();
    const retention = createRetention({
      db,
      logger,
      registry,
      batchSize: 2,
      rules: [{ table: 'deliveries', column: 'created_at', days: 30, onlyWhere: `status <> 'pending'` }],
    });
    // Statements of two rows at most, one after another until a batch comes back short: 126 statements, all
    // 251 rows in one run (no cap of statements per run leaves a backlog behind).
    expect(await retention.runOnce()).toEqual({ deliveries: 251 });
    expect(await retention.runOnce()).toEqual({ deliveries: 0 });
    const left = await db('deliveries').select<{ status: string; created_at: Date }[]>(
      'status',
      'created_at',
    );
    expect(left.map((r) => r.status).sort()).toEqual(['delivered', 'pending']);
    expect(left.find((r) => r.status === 'delivered')!.created_at.getTime()).toBeGreaterThan(now - 3 * DAY);
    expect(await registry.getSingleMetricAsString('mds_retention_deleted_rows_total')).toContain(
      'mds_retention_deleted_rows_total{table="deliveries"} 251',
    );
    const completed = (await registry.getSingleMetric('mds_retention_done_timestamp_seconds')!.get())
      .values[0]!;
    expect(completed.labels).toEqual({ table: 'deliveries' });
    expect(completed.value).toBeGreaterThanOrEqual(now / 1000 - 1);
    expect(lines.some((l) => l.includes('retention removed old rows') && l.includes('"rows":251'))).toBe(
      true,
    );
  });

  it("goes on with the other tables when one's statement fails, and says it has not completed", async () => {
    await db('deliveries').insert({ status: 'delivered', created_at: new Date(Date.now() - 40 * DAY) });
    const registry = new Registry();
    const retention = createRetention({
      db,
      logger,
      registry,
      rules: [
        { table: 'no_such_table', column: 'at', days: 1 },
        { table: 'deliveries', column: 'created_at', days: 30, onlyWhere: `status <> 'pending'` },
      ],
    });
    expect(await retention.runOnce()).toEqual({ deliveries: 1 });
    const completed = await registry.getSingleMetric('mds_retention_done_timestamp_seconds')!.get();
    expect(completed.values.map((v) => v.labels.table)).toEqual(['deliveries']);
    expect(
      lines.some((l) => l.includes('retention could not remove old rows') && l.includes('no_such_table')),
    ).toBe(true);
  });

  it('ages the dead_letters table every service with one keeps, by when each record was set aside', async () => {
    const letter = {
      source: 'outbox',
      topic: 'mds.message.v1',
      key: 'k',
      payload: Buffer.from('x'),
      reason: 'r',
    };
    await quarantine(db, [letter, letter]);
    await db('dead_letters')
      .where({
        id: await db('dead_letters')
          .min('id')
          .first()
          .then((r) => (r as { min: number }).min),
      })
      .update({ quarantined_at: new Date(Date.now() - 100 * DAY) });
    const retention = createRetention({ db, logger, rules: [deadLettersRule(90)] });
    expect(await retention.runOnce()).toEqual({ dead_letters: 1 });
    expect(await db('dead_letters').count('* as n').first()).toEqual({ n: '1' });
  });

  it('keeps everything when a table is configured to keep rows for ever (0 days)', async () => {
    await db('deliveries').insert({ status: 'delivered', created_at: new Date(Date.now() - 5_000 * DAY) });
    const retention = createRetention({
      db,
      logger,
      rules: [{ table: 'deliveries', column: 'created_at', days: 0 }],
    });
    expect(await retention.runOnce()).toEqual({ deliveries: 0 });
  });
});

describe('the subject index', () => {
  it("finds a forgotten person's rows once, and only theirs", async () => {
    await rememberSubjects(db, [
      { company_id: COMPANY, subject_id: 'ivan', row_id: 'm1' },
      { company_id: COMPANY, subject_id: 'ivan', row_id: 'm2' },
      { company_id: COMPANY, subject_id: 'ivan', row_id: 'm2' },
      { company_id: COMPANY, subject_id: 'olga', row_id: 'm3' },
    ]);
    expect((await takeSubjectRows(db, COMPANY, 'ivan')).sort()).toEqual(['m1', 'm2']);
    expect(await takeSubjectRows(db, COMPANY, 'ivan')).toEqual([]);
    expect(await takeSubjectRows(db, COMPANY, 'olga')).toEqual(['m3']);
  });
});
