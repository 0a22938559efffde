import { Writable } from 'node:stream';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { createTestDatabase, uniqueName } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRetention } from './retention.js';
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
  it('removes old finished rows in bounded batches, keeps recent and pending ones, and says what it removed', async () => {
    const now = Date.now();
    const rows = [
      ...Array.from({ length: 25 }, () => ({ status: 'delivered', created_at: new Date(now - 40 * DAY) })),
      { status: 'pending', created_at: new Date(now - 40 * DAY) },
      { status: 'delivered', created_at: new Date(now - 2 * DAY) },
    ];
    await db('deliveries').insert(rows);
    const registry = new Registry();
    const retention = createRetention({
      db,
      logger,
      registry,
      batchSize: 10,
      maxBatchesPerRun: 2,
      rules: [{ table: 'deliveries', column: 'created_at', days: 30, onlyWhere: `status <> 'pending'` }],
    });
    // Bounded: two batches of ten this run, the last five on the next.
    expect(await retention.runOnce()).toEqual({ deliveries: 20 });
    expect(await retention.runOnce()).toEqual({ deliveries: 5 });
    expect(await retention.runOnce()).toEqual({ deliveries: 0 });
    const left = await db('deliveries').select<{ status: string; created_at: Date }[]>(
      'status',
      'created_at',
    );
    expect(left.map((r) => r.status).sort()).toEqual(['delivered', 'pending']);
    expect(left.find((r) => r.status === 'delivered')!.created_at.getTime()).toBeGreaterThan(now - 3 * DAY);
    expect(await registry.getSingleMetricAsString('mds_retention_deleted_rows_total')).toContain(
      'mds_retention_deleted_rows_total{table="deliveries"} 25',
    );
    expect(lines.some((l) => l.includes('retention removed old rows') && l.includes('"rows":20'))).toBe(true);
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
