// PostgreSQL's real errors, as pg and knex throw them, through the services' logger and the dead-letter reason:
// the row's values (a number, a text) are in the error's detail, its where, and some messages; none reaches a
// log line or a stored reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorSummary } from '@mds/logging';
import { capturedLogger } from '@mds/logging/testing';
import { migratedTestSchema, type TestSchema } from './test-support/schema.js';

const PHONE = '79123456789';
const TEXT = 'meet me at the station';

let schema: TestSchema;

beforeAll(async () => {
  schema = await migratedTestSchema('errors_in_logs', [
    {
      name: '0001_rows',
      up: (db) =>
        db.schema.createTable('rows', (t) => {
          t.uuid('id').primary();
          t.text('phone').notNullable().unique();
          t.text('text').notNullable();
          t.jsonb('data');
        }),
      down: (db) => db.schema.dropTable('rows'),
    },
  ]);
  await schema.db('rows').insert({ id: '00000000-0000-4000-8000-000000000001', phone: PHONE, text: TEXT });
});

afterAll(async () => {
  await schema?.drop();
});

async function refusal(statement: Promise<unknown>): Promise<Error> {
  try {
    await statement;
  } catch (error) {
    return error as Error;
  }
  throw new Error('PostgreSQL took it');
}

describe('a PostgreSQL error', () => {
  it('is logged with its SQLSTATE, table and column, and without the values of the row it refused', async () => {
    const { db } = schema;
    const errors = {
      nul: await refusal(
        db('rows').insert({
          id: '00000000-0000-4000-8000-000000000002',
          phone: '7900',
          text: 'x',
          data: { text: `${TEXT} \u0000` },
        }),
      ),
      uuid: await refusal(db('rows').insert({ id: `${PHONE} ${TEXT}`, phone: '7901', text: 'x' })),
      notNull: await refusal(
        db('rows').insert({
          id: '00000000-0000-4000-8000-000000000003',
          phone: PHONE.slice(1),
          text: null as never,
        }),
      ),
      unique: await refusal(
        db('rows').insert({ id: '00000000-0000-4000-8000-000000000004', phone: PHONE, text: TEXT }),
      ),
    };
    // What PostgreSQL says quotes the row: the reason this matters.
    const raw = JSON.stringify(Object.values(errors).map((e) => ({ ...e, message: e.message })));
    expect(raw).toContain(PHONE);
    expect(raw).toContain(TEXT);

    const { lines, logger } = capturedLogger('errors-test');
    for (const err of Object.values(errors)) logger.error({ err }, 'could not store');
    const logged = JSON.stringify(lines);
    expect(logged).not.toContain(PHONE);
    expect(logged).not.toContain(TEXT);
    expect(lines.map((l) => (l.err as { code: string }).code)).toEqual(['22P05', '22P02', '23502', '23505']);
    expect(lines[2]!.err).toMatchObject({
      table: 'rows',
      column: 'text',
      condition: 'integrity constraint violation',
    });
    expect((lines[3]!.err as { message: string }).message).toContain('insert into "rows"');
    // The SQL's names stay; the value PostgreSQL quotes goes.
    expect((lines[1]!.err as { message: string }).message).toMatch(
      /^insert into "rows" \("id", "phone", "text"\) values \(\$1, \$2, \$3\) - invalid input syntax for type uuid: "…"$/,
    );

    const reasons = Object.values(errors).map(errorSummary);
    expect(reasons.join(' ')).not.toMatch(new RegExp(`${PHONE}|${TEXT}`));
    expect(reasons[2]).toBe(
      `DatabaseError 23502 (integrity constraint violation), schema ${schema.schema}, table rows, column text`,
    );
  });
});
