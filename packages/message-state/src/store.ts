import type { Knex, Migration } from '@mds/db';
import { fromRow, STATE_TABLE, toRow, type StateRow } from './domain/row.js';
import { evolve, type EventState, type StateRecord } from './domain/state.js';

/**
 * The projection's table. The gateway adds it to its migrations; a rebuild creates it alone in a fresh
 * schema.
 */
export const eventStatesMigration: Migration = {
  name: '0003_event_states',
  up: (db) =>
    db.schema.createTable(STATE_TABLE, (t) => {
      t.uuid('event_id').primary();
      t.text('kind').notNullable();
      t.text('company_id').notNullable();
      t.text('state').notNullable();
      t.timestamp('accepted_at', { useTz: true });
      t.timestamp('finished_at', { useTz: true });
      t.timestamp('updated_at', { useTz: true }).notNullable();
      t.text('error_code');
      t.text('error_description');
      t.text('messenger');
      t.text('bot_name');
      t.text('bot_id');
      t.integer('attempts');
      t.jsonb('result');
      t.jsonb('history').notNullable();
    }),
  down: (db) => db.schema.dropTable(STATE_TABLE),
};

/** The requests' metadata (issue 35), as the state keeps it (sealed, or plain text); null for none. */
export const eventStatesMetadataMigration: Migration = {
  name: '0007_event_states_metadata',
  up: (db) => db.schema.alterTable(STATE_TABLE, (t) => t.jsonb('metadata')),
  down: (db) => db.schema.alterTable(STATE_TABLE, (t) => t.dropColumn('metadata')),
};

/** A message's fallback route (issue 35), as the state keeps it (FallbackRoute as JSON); null for none. */
export const eventStatesFallbackMigration: Migration = {
  name: '0008_event_states_fallback',
  up: (db) => db.schema.alterTable(STATE_TABLE, (t) => t.jsonb('fallback')),
  down: (db) => db.schema.alterTable(STATE_TABLE, (t) => t.dropColumn('fallback')),
};

/** The projection's table as it is now, for a schema of its own (a rebuild's, a test's). */
export const eventStatesMigrations: Migration[] = [
  eventStatesMigration,
  eventStatesMetadataMigration,
  eventStatesFallbackMigration,
];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Applies a batch of events to the projection in one transaction: reads the rows of the streams they
 * belong to, folds the events on with `evolve`, writes back the rows that changed. Idempotent (an event
 * already in a row's history changes nothing), so a batch that comes again after a crash is harmless.
 * `lockKeys` name what the batch came from (topics and partitions): two consumers that briefly handle the
 * same partition during a rebalance take turns instead of overwriting each other's fold.
 */
export async function applyEvents(
  db: Knex,
  records: readonly StateRecord[],
  lockKeys: readonly string[],
): Promise<{ changed: number }> {
  const relevant = records.filter((r) => UUID.test(r.metadata.streamId));
  if (relevant.length === 0) return { changed: 0 };
  return db.transaction(async (trx) => {
    // In one order, so that two consumers sharing some partitions never wait on each other in a circle.
    await trx.raw('select pg_advisory_xact_lock(hashtext(k)) from unnest(?::text[]) as k order by k', [
      [...new Set(lockKeys)].sort().map((key) => `event-states:${key}`),
    ]);
    const ids = [...new Set(relevant.map((r) => r.metadata.streamId))];
    const rows = (await trx(STATE_TABLE).whereIn('event_id', ids)) as StateRow[];
    const before = new Map(rows.map((row) => [row.event_id, fromRow(row)]));
    const after = new Map(before);
    for (const record of relevant) {
      const id = record.metadata.streamId;
      after.set(id, evolve(after.get(id), record));
    }
    const changed = [...after.entries()]
      .filter(([id, state]) => before.get(id) !== state)
      .map(([, state]) => state);
    if (changed.length > 0) await upsertStates(trx, changed);
    return { changed: changed.length };
  });
}

const COLUMNS = [
  'event_id',
  'kind',
  'company_id',
  'state',
  'accepted_at',
  'finished_at',
  'updated_at',
  'error_code',
  'error_description',
  'messenger',
  'bot_name',
  'bot_id',
  'attempts',
  'result',
  'history',
  'metadata',
  'fallback',
] as const;

/**
 * Inserts or replaces rows in one statement with one parameter (the rows as JSON): a batch of hundreds of
 * rows costs one JSON.stringify instead of thousands of bound values.
 */
async function upsertStates(db: Knex, states: readonly EventState[]): Promise<void> {
  const rows = states.map((state) => ({
    ...toRow(state),
    result: state.result,
    history: state.history,
    metadata: state.metadata,
    fallback: state.fallback,
  }));
  const list = COLUMNS.join(', ');
  await db.raw(
    `insert into ${STATE_TABLE} (${list})
     select ${list} from jsonb_populate_recordset(null::${STATE_TABLE}, ?::jsonb)
     on conflict (event_id) do update set ${COLUMNS.filter((c) => c !== 'event_id')
       .map((c) => `${c} = excluded.${c}`)
       .join(', ')}`,
    [JSON.stringify(rows)],
  );
}

/** Writes whole states (a rebuild's result) in chunks; rows already there are replaced. */
export async function writeStates(
  db: Knex,
  states: Iterable<EventState>,
  chunkSize = 1_000,
): Promise<number> {
  let chunk: EventState[] = [];
  let written = 0;
  const flush = async () => {
    if (chunk.length === 0) return;
    await upsertStates(db, chunk);
    written += chunk.length;
    chunk = [];
  };
  for (const state of states) {
    if (!UUID.test(state.eventId)) continue;
    chunk.push(state);
    if (chunk.length >= chunkSize) await flush();
  }
  await flush();
  return written;
}

/** The state of one event_id as the company sees it: undefined when unknown or another company's. */
export async function readState(
  db: Knex,
  eventId: string,
  companyId: string,
): Promise<EventState | undefined> {
  if (!UUID.test(eventId)) return undefined;
  const row = (await db(STATE_TABLE)
    .where({ event_id: eventId.toLowerCase(), company_id: companyId })
    .first()) as StateRow | undefined;
  return row ? fromRow(row) : undefined;
}

/** Every row, ordered by event_id: what a rebuilt and a live projection are compared on. */
export async function allStates(db: Knex): Promise<EventState[]> {
  const rows = (await db(STATE_TABLE).orderBy('event_id')) as StateRow[];
  return rows.map(fromRow);
}
