import knexFactory, { type Knex } from 'knex';

export type { Knex };

export interface DatabaseOptions {
  url: string;
  /** The service's own schema: its tables, its migration history. No service touches another's. */
  schema: string;
  poolMax?: number;
  applicationName?: string;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** A knex instance bound to one schema (created if missing): unqualified table names resolve there. */
export async function openDatabase(o: DatabaseOptions): Promise<Knex> {
  if (!SCHEMA_NAME.test(o.schema)) throw new Error(`invalid schema name "${o.schema}"`);
  const db = knexFactory({
    client: 'pg',
    connection: { connectionString: o.url, application_name: o.applicationName ?? o.schema },
    searchPath: [o.schema, 'public'],
    pool: { min: 0, max: o.poolMax ?? 10 },
    acquireConnectionTimeout: 10_000,
    // Query errors name the SQL without its values: no secret travels in an error message.
    compileSqlOnError: false,
  });
  // "if not exists" is not safe when replicas start together (both pass the check, one then violates
  // pg_namespace's unique index): serialise it on the schema's name.
  await db.transaction(async (trx) => {
    await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`mds-schema:${o.schema}`]);
    await trx.raw('create schema if not exists ??', [o.schema]);
  });
  return db;
}

export interface Migration {
  /** Sortable and never renamed once released, e.g. "0001_create_messages". */
  name: string;
  up(db: Knex): Promise<void>;
  down(db: Knex): Promise<void>;
}

class ListMigrationSource implements Knex.MigrationSource<Migration> {
  constructor(private readonly migrations: readonly Migration[]) {}
  getMigrations() {
    return Promise.resolve([...this.migrations].sort((a, b) => a.name.localeCompare(b.name)));
  }
  getMigrationName(migration: Migration) {
    return migration.name;
  }
  getMigration(migration: Migration) {
    return Promise.resolve({ up: (db: Knex) => migration.up(db), down: (db: Knex) => migration.down(db) });
  }
}

function migratorConfig(schema: string, migrations: readonly Migration[]): Knex.MigratorConfig {
  return {
    migrationSource: new ListMigrationSource(migrations),
    schemaName: schema,
    tableName: 'knex_migrations',
    // Each migration runs in its own transaction; knex's lock table makes concurrent runs (several
    // replicas starting at once, or a deploy Job) wait for each other.
    disableTransactions: false,
  };
}

/**
 * Runs `fn` while holding a transaction-scoped advisory lock named after the schema. knex's own lock
 * table does not cover the first run, when two replicas both try to create it.
 */
async function withMigrationLock<T>(db: Knex, schema: string, fn: () => Promise<T>): Promise<T> {
  const lock = await db.transaction();
  try {
    await lock.raw('select pg_advisory_xact_lock(hashtext(?))', [`mds-migrations:${schema}`]);
    const result = await fn();
    await lock.commit();
    return result;
  } catch (error) {
    await lock.rollback();
    throw error;
  }
}

/**
 * Applies every migration not yet applied; returns their names. Safe to run twice and concurrently, and by
 * an older build against a schema a newer one has migrated further.
 */
export async function migrateUp(
  db: Knex,
  schema: string,
  migrations: readonly Migration[],
): Promise<string[]> {
  return withMigrationLock(db, schema, async () => {
    const [, applied] = (await db.migrate.latest({
      ...migratorConfig(schema, migrations),
      // A schema migrated further than this build knows is normal during a rolling upgrade (the deploy step
      // of the new version ran first) and after a rollback: the older build applies nothing and starts.
      // Migrations only expand until every running version has stopped using what a later one contracts.
      disableMigrationsListValidation: true,
    })) as [number, string[]];
    return applied;
  });
}

/** Rolls back the last batch of migrations, or all of them with `all`. */
export async function migrateDown(
  db: Knex,
  schema: string,
  migrations: readonly Migration[],
  options: { all?: boolean } = {},
): Promise<string[]> {
  return withMigrationLock(db, schema, async () => {
    const [, reverted] = (await db.migrate.rollback(
      migratorConfig(schema, migrations),
      options.all ?? false,
    )) as [number, string[]];
    return reverted;
  });
}

/**
 * The table an idempotent consumer keeps the ids of events it has applied in, in the same transaction as
 * their effects. Add it to the service's migrations.
 */
export const processedEventsMigration: Migration = {
  name: '0000_processed_events',
  up: async (db) => {
    await db.schema.createTable('processed_events', (t) => {
      t.text('consumer').notNullable();
      t.uuid('event_id').notNullable();
      t.timestamp('processed_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
      t.primary(['consumer', 'event_id']);
    });
  },
  down: async (db) => {
    await db.schema.dropTable('processed_events');
  },
};

/**
 * Records that `consumer` applies `eventId` now. False when it already had: the caller skips the event.
 * Call it inside the transaction that stores the event's effects.
 */
export async function firstTimeSeen(
  trx: Knex.Transaction,
  consumer: string,
  eventId: string,
): Promise<boolean> {
  const inserted = await trx('processed_events')
    .insert({ consumer, event_id: eventId })
    .onConflict(['consumer', 'event_id'])
    .ignore()
    .returning('event_id');
  return inserted.length > 0;
}

/** firstTimeSeen for many events in one statement: the ids seen for the first time now. */
export async function firstSeenOf(
  trx: Knex.Transaction,
  consumer: string,
  eventIds: readonly string[],
): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const inserted = await trx('processed_events')
    .insert([...new Set(eventIds)].map((eventId) => ({ consumer, event_id: eventId })))
    .onConflict(['consumer', 'event_id'])
    .ignore()
    .returning<{ event_id: string }[]>('event_id');
  return new Set(inserted.map((r) => r.event_id));
}

export async function databaseAnswers(db: Knex): Promise<boolean> {
  try {
    await db.raw('select 1');
    return true;
  } catch {
    return false;
  }
}

/**
 * Records set aside for good (quarantined): an outbox row or a consumed record this build cannot read. They
 * stop nothing: the rest goes on, a metric and an alert say they were set aside, and an operator looks
 * here (and re-publishes them once a build that reads them runs). Add it to the service's migrations.
 */
export const deadLettersMigration: Migration = {
  name: '0000_dead_letters',
  up: async (db) => {
    await db.schema.createTable('dead_letters', (t) => {
      t.bigIncrements('id');
      /** `outbox`, or `consumer:<group>`. */
      t.text('source').notNullable();
      t.text('topic').notNullable();
      t.integer('kafka_partition');
      t.bigInteger('kafka_offset');
      t.text('key');
      t.binary('payload');
      t.text('reason').notNullable();
      t.timestamp('quarantined_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
    });
  },
  down: async (db) => {
    await db.schema.dropTable('dead_letters');
  },
};

export interface DeadLetter {
  source: string;
  topic: string;
  partition?: number;
  offset?: string;
  key: string | null;
  payload: Buffer | null;
  reason: string;
}

/** Sets records aside in the service's `dead_letters` table (see deadLettersMigration). */
export async function quarantine(db: Knex, letters: readonly DeadLetter[]): Promise<void> {
  if (letters.length === 0) return;
  await db('dead_letters').insert(
    letters.map((l) => ({
      source: l.source,
      topic: l.topic,
      kafka_partition: l.partition ?? null,
      kafka_offset: l.offset ?? null,
      key: l.key,
      payload: l.payload,
      reason: l.reason,
    })),
  );
}

/** A record a consumer group set aside (undecodable, or refused by its handler): @mds/kafka's SetAsideRecord. */
export interface ConsumerDeadLetter extends Omit<DeadLetter, 'source' | 'partition' | 'offset'> {
  group: string;
  partition: number;
  offset: string;
}

/**
 * The service's `dead_letters` table as a consumer group's dead-letter sink (`deadLetters` of
 * createEventConsumer): each record is kept as `consumer:<group>` with its topic, partition, offset, key,
 * bytes and reason.
 */
export function deadLetterTable(db: Knex): {
  setAside(records: readonly ConsumerDeadLetter[]): Promise<void>;
} {
  return {
    setAside: (records) =>
      quarantine(
        db,
        records.map(({ group, ...r }) => ({ ...r, source: `consumer:${group}` })),
      ),
  };
}
