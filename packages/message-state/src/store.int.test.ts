import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamOf } from '../test/events.js';
import { foldInto, foldState, type StateRecord } from './domain/state.js';
import { allStates, applyEvents, eventStatesMigrations, readState, writeStates } from './store.js';

const schemas: string[] = [];
const dbs: Knex[] = [];
async function freshSchema(): Promise<Knex> {
  const schema = uniqueName('states').toLowerCase();
  const db = await openDatabase({ url: testInfra().databaseUrl, schema });
  await migrateUp(db, schema, eventStatesMigrations);
  schemas.push(schema);
  dbs.push(db);
  return db;
}

let db: Knex;
beforeAll(async () => {
  db = await freshSchema();
});
afterAll(async () => {
  for (const [i, d] of dbs.entries()) {
    await d.raw('drop schema ?? cascade', [schemas[i]!]);
    await d.destroy();
  }
});

describe('the event-states projection in PostgreSQL', () => {
  it('stores the fold of the events, and a batch that comes again changes nothing', async () => {
    const m = streamOf();
    const events = [m.accepted(0), m.sent(2)];
    await applyEvents(db, events, ['p0']);
    expect(await readState(db, m.id, 'company-1')).toEqual(foldState(events));
    expect(await applyEvents(db, events, ['p0'])).toEqual({ changed: 0 });
    expect(await readState(db, m.id, 'company-1')).toEqual(foldState(events));
  });

  it('folds on across batches as if it had seen them at once', async () => {
    const m = streamOf();
    const r = streamOf();
    const events = [m.accepted(0), r.phoneChangeRequested(0), m.failed(1), r.phoneChangeRejected(2)];
    for (const e of events) await applyEvents(db, [e], ['p1']);
    expect(await readState(db, m.id, 'company-1')).toEqual(foldState([events[0]!, events[2]!]));
    expect(await readState(db, r.id, 'company-1')).toEqual(foldState([events[1]!, events[3]!]));
  });

  it('shows a company only its own states, and nothing for ids that are not UUIDs', async () => {
    const m = streamOf(undefined, 'company-a');
    await applyEvents(db, [m.accepted()], ['p2']);
    expect(await readState(db, m.id, 'company-a')).toBeDefined();
    expect(await readState(db, m.id, 'company-b')).toBeUndefined();
    expect(await readState(db, 'not-a-uuid', 'company-a')).toBeUndefined();
  });

  it('two writers of the same partition take turns and lose nothing', async () => {
    const m = streamOf();
    const events = [m.accepted(0), m.sent(1)];
    await Promise.all([applyEvents(db, [events[0]!], ['p3']), applyEvents(db, [events[1]!], ['p3'])]);
    expect((await readState(db, m.id, 'company-1'))?.history).toHaveLength(2);
  });

  it('a rebuild written whole equals the projection built batch by batch', async () => {
    const live = await freshSchema();
    const rebuilt = await freshSchema();
    const records: StateRecord[] = [];
    for (let i = 0; i < 30; i++) {
      const s = streamOf();
      records.push(i % 3 === 0 ? s.checkRequested() : s.accepted());
      records.push(i % 3 === 0 ? s.checked() : i % 2 ? s.sent() : s.failed());
    }
    for (let i = 0; i < records.length; i += 7) await applyEvents(live, records.slice(i, i + 7), ['p']);
    await writeStates(rebuilt, foldInto(new Map(), records).values(), 10);
    const liveStates = await allStates(live);
    expect(liveStates).toHaveLength(30);
    expect(await allStates(rebuilt)).toEqual(liveStates);
  });
});
