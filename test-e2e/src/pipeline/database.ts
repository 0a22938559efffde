// What the stack asks of PostgreSQL: committed transactions and rows written per table (the server's own
// statistics, flushed by each backend within about a second), to divide by the messages delivered.
import pg from 'pg';

export interface DatabaseCounters {
  commits: number;
  /** Rows inserted, updated or deleted, by schema.table. */
  writes: Map<string, number>;
}

export async function databaseCounters(url: string): Promise<DatabaseCounters> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const db = await client.query<{ commits: string }>(
      'select xact_commit as commits from pg_stat_database where datname = current_database()',
    );
    const tables = await client.query<{ name: string; writes: string }>(
      `select schemaname || '.' || relname as name, n_tup_ins + n_tup_upd + n_tup_del as writes
       from pg_stat_user_tables`,
    );
    return {
      commits: Number(db.rows[0]?.commits ?? 0),
      writes: new Map(tables.rows.map((r) => [r.name, Number(r.writes)])),
    };
  } finally {
    await client.end();
  }
}

/** Transactions and the busiest tables' row writes per delivered message between two readings. */
export function printDatabase(
  before: DatabaseCounters,
  after: DatabaseCounters,
  delivered: number,
): { transactions: number; rows: number } {
  if (delivered === 0) return { transactions: NaN, rows: NaN };
  const per = (n: number) => (n / delivered).toFixed(2);
  const all = [...after.writes].map(([name, n]) => [name, n - (before.writes.get(name) ?? 0)] as const);
  const tables = all.filter(([, n]) => n / delivered >= 0.05).sort((a, b) => b[1] - a[1]);
  const rows = all.reduce((sum, [, n]) => sum + n, 0);
  console.log(
    `  PostgreSQL per message: ${per(after.commits - before.commits)} transactions; ${per(rows)} rows written: ` +
      tables.map(([name, n]) => `${name} ${per(n)}`).join(', '),
  );
  return { transactions: (after.commits - before.commits) / delivered, rows: rows / delivered };
}

/** Sums of a Prometheus counter's series whose labels contain `having` (e.g. `status="429"`), by service. */
export async function metricSum(url: string, name: string, having = ''): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(having))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}
