// What the stack asks of PostgreSQL, from the server's own statistics of the stack's database (no other
// stack uses it): committed transactions, and per schema (a schema per service) the rows written and the
// table scans made (sequential and by index: a query that reads a table counts, even inside a transaction
// that was there already). Each backend flushes its statistics within about a second of going idle.
import pg from 'pg';

export interface SchemaCounts {
  /** Rows inserted, updated or deleted. */
  rowsWritten: number;
  /** Sequential and index scans of its tables. */
  scans: number;
}

export interface DatabaseCounters {
  /** Transactions committed in the stack's database, the reading's own not counted. */
  commits: number;
  /** Rows written, by schema.table. */
  writes: Map<string, number>;
  bySchema: Map<string, SchemaCounts>;
}

/** The statistics now, read in one transaction (which the counts leave out). */
export async function databaseCounters(url: string): Promise<DatabaseCounters> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('begin');
    const db = await client.query<{ commits: string }>(
      'select xact_commit as commits from pg_stat_database where datname = current_database()',
    );
    const tables = await client.query<{ schema: string; name: string; writes: string; scans: string }>(
      `select schemaname as schema, relname as name, n_tup_ins + n_tup_upd + n_tup_del as writes,
              coalesce(seq_scan, 0) + coalesce(idx_scan, 0) as scans
       from pg_stat_user_tables`,
    );
    await client.query('commit');
    const bySchema = new Map<string, SchemaCounts>();
    for (const t of tables.rows) {
      const s = bySchema.get(t.schema) ?? { rowsWritten: 0, scans: 0 };
      s.rowsWritten += Number(t.writes);
      s.scans += Number(t.scans);
      bySchema.set(t.schema, s);
    }
    return {
      commits: Number(db.rows[0]?.commits ?? 0),
      writes: new Map(tables.rows.map((r) => [`${r.schema}.${r.name}`, Number(r.writes)])),
      bySchema,
    };
  } finally {
    await client.end();
  }
}

export interface DatabaseWork {
  /** Per message delivered. */
  transactions: number;
  rows: number;
  bySchema: Map<string, SchemaCounts>;
}

/** Transactions, rows and scans per delivered message between two readings (the later one's own begin/commit aside). */
export function databaseWork(
  before: DatabaseCounters,
  after: DatabaseCounters,
  delivered: number,
): DatabaseWork {
  const bySchema = new Map<string, SchemaCounts>();
  for (const [schema, a] of after.bySchema) {
    const b = before.bySchema.get(schema) ?? { rowsWritten: 0, scans: 0 };
    bySchema.set(schema, {
      rowsWritten: (a.rowsWritten - b.rowsWritten) / delivered,
      scans: (a.scans - b.scans) / delivered,
    });
  }
  const rows = [...after.writes].reduce((sum, [name, n]) => sum + n - (before.writes.get(name) ?? 0), 0);
  // The earlier reading's transaction committed in between.
  return { transactions: (after.commits - before.commits - 1) / delivered, rows: rows / delivered, bySchema };
}

/** Prints the transactions, the busiest tables' row writes and each schema's scans per delivered message. */
export function printDatabase(
  before: DatabaseCounters,
  after: DatabaseCounters,
  delivered: number,
): DatabaseWork {
  if (delivered === 0) return { transactions: NaN, rows: NaN, bySchema: new Map() };
  const work = databaseWork(before, after, delivered);
  const per = (n: number) => (n / delivered).toFixed(2);
  const tables = [...after.writes]
    .map(([name, n]) => [name, n - (before.writes.get(name) ?? 0)] as const)
    .filter(([, n]) => n / delivered >= 0.05)
    .sort((a, b) => b[1] - a[1]);
  console.log(
    `  PostgreSQL per message: ${work.transactions.toFixed(2)} transactions; ${work.rows.toFixed(2)} rows written: ` +
      tables.map(([name, n]) => `${name} ${per(n)}`).join(', '),
  );
  console.log(
    `    table scans per message, by schema: ` +
      [...work.bySchema]
        .filter(([, s]) => s.scans >= 0.005)
        .map(([schema, s]) => `${schema} ${s.scans.toFixed(2)}`)
        .join(', '),
  );
  return work;
}
