// mds-replay query: DuckDB SQL over an export folder. Every table of the export is a view of the same
// name (event tables read across their day= folders, with `day` as a column), so the SQL names tables,
// not files. A few reports an analyst asks for first ship by name.
import { readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DuckDBInstance, DuckDBTypeId } from '@duckdb/node-api';

export const REPORTS: Record<string, { title: string; sql: string }> = {
  'delivery-rate': {
    title: 'delivery rate by company and day (messages accepted that day)',
    sql: `select company_id, cast(accepted_at at time zone 'UTC' as date) as day,
  count(*) as messages,
  count(*) filter (where state = 'sent') as sent,
  count(*) filter (where state = 'failed') as failed,
  count(*) filter (where state = 'new') as pending,
  round(100.0 * count(*) filter (where state = 'sent') / count(*), 1) as delivered_pct
from messages where accepted_at is not null
group by all order by company_id, day`,
  },
  'failures-by-bot': {
    title: 'failure reasons by bot',
    sql: `select coalesce(messenger, '?') as messenger,
  coalesce(nullif(bot_name, ''), '(default)') as bot_name, error_code, count(*) as failures
from messages where state = 'failed'
group by all order by failures desc, messenger, bot_name, error_code`,
  },
  'latency-by-hour': {
    title: 'accepted -> outcome latency percentiles (ms) by hour accepted',
    sql: `select date_trunc('hour', accepted_at at time zone 'UTC') as hour_utc, count(*) as messages,
  cast(quantile_cont(accepted_to_finished_ms, 0.5) as bigint) as p50_ms,
  cast(quantile_cont(accepted_to_finished_ms, 0.9) as bigint) as p90_ms,
  cast(quantile_cont(accepted_to_finished_ms, 0.99) as bigint) as p99_ms,
  max(accepted_to_finished_ms) as max_ms
from messages where accepted_to_finished_ms is not null
group by all order by hour_utc`,
  },
  'webhook-failures': {
    title: 'webhook endpoints by failure rate',
    sql: `select url, count(*) as attempts,
  count(*) filter (where outcome <> 'succeeded') as failed_attempts,
  round(100.0 * count(*) filter (where outcome <> 'succeeded') / count(*), 1) as failure_pct,
  count(distinct webhook_id) filter (where delivery_outcome = 'abandoned') as abandoned_deliveries,
  cast(quantile_cont(latency_ms, 0.9) as bigint) as p90_latency_ms
from webhook_attempts
group by all order by failure_pct desc, attempts desc, url`,
  },
};

export type OutputFormat = 'table' | 'csv' | 'json';

export class QueryError extends Error {
  override readonly name = 'QueryError';
}

const sqlString = (value: string) => `'${value.replaceAll("'", "''")}'`;
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The views of an export folder: table name -> DuckDB expression reading it. */
export async function exportViews(dir: string): Promise<Map<string, string>> {
  const root = resolve(dir);
  const base = await pick(root);
  if (!base)
    throw new QueryError(
      `${root} holds no export (no parquet/ or csv/ folder): run mds-replay export --out ${dir} first`,
    );
  const { format, path } = base;
  const reader = format === 'parquet' ? 'read_parquet' : 'read_csv';
  const views = new Map<string, string>();
  for (const entry of await readdir(path, { withFileTypes: true })) {
    if (entry.isDirectory())
      views.set(
        entry.name,
        `${reader}(${sqlString(join(path, entry.name, '**', `*.${format}`))}, hive_partitioning = true)`,
      );
    else if (entry.name.endsWith(`.${format}`))
      views.set(entry.name.slice(0, -format.length - 1), `${reader}(${sqlString(join(path, entry.name))})`);
  }
  return views;
}

async function pick(root: string): Promise<{ format: 'parquet' | 'csv'; path: string } | undefined> {
  for (const format of ['parquet', 'csv'] as const) {
    const path = join(root, format);
    if (
      await stat(path).then(
        (s) => s.isDirectory(),
        () => false,
      )
    )
      return { format, path };
  }
  return undefined;
}

export interface QueryResult {
  columns: string[];
  rows: unknown[][];
}

/** Runs `sql` with every table of the export in `dir` as a view. */
export async function queryExport(dir: string, sql: string): Promise<QueryResult> {
  const views = await exportViews(dir);
  const instance = await DuckDBInstance.create(':memory:');
  const db = await instance.connect();
  try {
    for (const [name, expr] of views) await db.run(`create view ${ident(name)} as select * from ${expr}`);
    let reader;
    try {
      reader = await db.runAndReadAll(sql);
    } catch (error) {
      throw new QueryError(
        `${(error as Error).message.split('\n')[0]}\n(tables in ${resolve(dir)}: ${[...views.keys()].sort().join(', ')})`,
      );
    }
    // Dates as dates (2026-01-31), not as midnight timestamps.
    const dates = reader.columnTypes().map((t) => t.typeId === DuckDBTypeId.DATE);
    const rows = reader
      .getRowsJS()
      .map((row) => row.map((v, i) => (dates[i] && v instanceof Date ? v.toISOString().slice(0, 10) : v)));
    return { columns: reader.columnNames(), rows };
  } finally {
    db.closeSync();
    instance.closeSync();
  }
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object')
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? Number(x) : x));
  if (typeof v === 'string') return v;
  return typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' ? v.toString() : '';
}

function jsonValue(v: unknown): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (v instanceof Date) return v.toISOString();
  return v;
}

const csvCell = (v: unknown) => {
  const s = cell(v);
  return /[",\n\r]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
};

/** The result as a terminal table, CSV, or JSON (an array of objects). */
export function formatResult(r: QueryResult, format: OutputFormat): string {
  if (format === 'json')
    return JSON.stringify(
      r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, jsonValue(row[i])]))),
      null,
      2,
    );
  if (format === 'csv')
    return [r.columns.map(csvCell).join(','), ...r.rows.map((row) => row.map(csvCell).join(','))].join('\n');
  const cells = r.rows.map((row) => row.map(cell));
  const widths = r.columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const numeric = r.columns.map((_c, i) =>
    r.rows.every((row) => row[i] === null || typeof row[i] === 'number' || typeof row[i] === 'bigint'),
  );
  const line = (values: string[]) =>
    values
      .map((v, i) => (numeric[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [
    line(r.columns),
    line(widths.map((w) => '-'.repeat(w))),
    ...cells.map(line),
    `(${r.rows.length} row${r.rows.length === 1 ? '' : 's'})`,
  ].join('\n');
}
