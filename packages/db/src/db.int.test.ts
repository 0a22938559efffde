import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import {
  databaseAnswers,
  firstTimeSeen,
  migrateDown,
  migrateUp,
  openDatabase,
  processedEventsMigration,
  type Knex,
  type Migration,
} from './index.js';

const opened: Knex[] = [];
afterEach(async () => {
  while (opened.length) await opened.pop()!.destroy();
});

async function open(schema: string): Promise<Knex> {
  const db = await openDatabase({ url: testInfra().databaseUrl, schema, poolMax: 4 });
  opened.push(db);
  return db;
}

const createNotes: Migration = {
  name: '0001_create_notes',
  up: (db) =>
    db.schema.createTable('notes', (t) => {
      t.text('id').primary();
      t.text('body');
    }),
  down: (db) => db.schema.dropTable('notes'),
};
const addAuthor: Migration = {
  name: '0002_add_author',
  up: (db) =>
    db.schema.alterTable('notes', (t) => {
      t.text('author');
    }),
  down: (db) =>
    db.schema.alterTable('notes', (t) => {
      t.dropColumn('author');
    }),
};

async function columns(db: Knex, schema: string, table: string): Promise<string[]> {
  const rows = await db('information_schema.columns')
    .where({ table_schema: schema, table_name: table })
    .orderBy('ordinal_position')
    .select<{ column_name: string }[]>('column_name');
  return rows.map((r) => r.column_name);
}

describe('a schema per service', () => {
  it('keeps tables of the same name in two services apart', async () => {
    const [a, b] = [uniqueName('svc_a'), uniqueName('svc_b')];
    const dbA = await open(a);
    const dbB = await open(b);
    await migrateUp(dbA, a, [createNotes]);
    await migrateUp(dbB, b, [createNotes]);
    await dbA('notes').insert({ id: '1', body: 'from a' });
    expect(await dbB('notes').select()).toEqual([]);
    expect(await dbA('notes').select('body')).toEqual([{ body: 'from a' }]);
    expect(await databaseAnswers(dbA)).toBe(true);
  });

  it('rejects a schema name that is not a plain identifier', async () => {
    await expect(openDatabase({ url: testInfra().databaseUrl, schema: 'x; drop table y' })).rejects.toThrow(
      /invalid schema/,
    );
  });
});

describe('migrations', () => {
  it('go up, are harmless twice, and come down again', async () => {
    const schema = uniqueName('svc');
    const db = await open(schema);
    expect(await migrateUp(db, schema, [addAuthor, createNotes])).toEqual([
      '0001_create_notes',
      '0002_add_author',
    ]);
    expect(await migrateUp(db, schema, [createNotes, addAuthor])).toEqual([]);
    expect(await columns(db, schema, 'notes')).toEqual(['id', 'body', 'author']);

    await migrateUp(db, schema, [createNotes, addAuthor, processedEventsMigration]);
    expect(await migrateDown(db, schema, [createNotes, addAuthor, processedEventsMigration])).toEqual([
      '0000_processed_events',
    ]);
    expect(await migrateDown(db, schema, [createNotes, addAuthor], { all: true })).toEqual([
      '0002_add_author',
      '0001_create_notes',
    ]);
    expect(await columns(db, schema, 'notes')).toEqual([]);
  });

  it('let an older version start against a schema a newer version has migrated (rolling upgrade, rollback)', async () => {
    const schema = uniqueName('svc');
    const db = await open(schema);
    await migrateUp(db, schema, [createNotes, addAuthor]);
    // The older build knows only the first migration: it finds nothing to apply and starts.
    expect(await migrateUp(db, schema, [createNotes])).toEqual([]);
    expect(await columns(db, schema, 'notes')).toEqual(['id', 'body', 'author']);
  });

  it('run once when several replicas start at the same time', async () => {
    const schema = uniqueName('svc');
    const replicas = await Promise.all([open(schema), open(schema), open(schema)]);
    const applied = await Promise.all(replicas.map((db) => migrateUp(db, schema, [createNotes, addAuthor])));
    expect(applied.flat().sort()).toEqual(['0001_create_notes', '0002_add_author']);
  });

  it('roll back a failing migration whole', async () => {
    const schema = uniqueName('svc');
    const db = await open(schema);
    const broken: Migration = {
      name: '0003_broken',
      up: async (trx) => {
        await trx.schema.createTable('half_done', (t) => t.text('id'));
        await trx.raw('select no_such_function()');
      },
      down: async () => undefined,
    };
    await expect(migrateUp(db, schema, [createNotes, broken])).rejects.toThrow(/no_such_function/);
    const tables = await db('information_schema.tables').where({ table_schema: schema }).pluck('table_name');
    expect(tables).not.toContain('half_done');
  });
});

describe('idempotent consumers', () => {
  it('see an event id once per consumer, and the effect stays single when it comes twice', async () => {
    const schema = uniqueName('svc');
    const db = await open(schema);
    await migrateUp(db, schema, [processedEventsMigration, createNotes]);
    const eventId = randomUUID();
    const apply = () =>
      db.transaction(async (trx) => {
        if (!(await firstTimeSeen(trx, 'projector', eventId))) return false;
        await trx('notes').insert({ id: eventId, body: 'applied' });
        return true;
      });
    expect(await apply()).toBe(true);
    expect(await apply()).toBe(false);
    expect(await db('notes').count<{ count: string }[]>('* as count')).toEqual([{ count: '1' }]);
    await db.transaction(async (trx) =>
      expect(await firstTimeSeen(trx, 'another-consumer', eventId)).toBe(true),
    );
  });
});
