// mds-replay export: the log as typed tables for analysts (see docs/replay.md for the schema). Event
// tables are written by DuckDB as Parquet and/or CSV partitioned by day (<table>/day=YYYY-MM-DD/), the
// folded tables (messages, requests, webhook_attempts, links) whole. Beside them, .mds-replay/ keeps
// where each partition was read to and the folds, so `--since-last` reads only what came since and
// appends it. Everything written is readable by its owner only (0600 files, 0700 folders).
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import { isMainThread } from 'node:worker_threads';
import {
  DuckDBDateValue,
  DuckDBInstance,
  DuckDBTimestampTZValue,
  type DuckDBAppender,
  type DuckDBConnection,
} from '@duckdb/node-api';
import { messengerNames } from '@mds/contracts';
import { channelsOf } from '@mds/contracts/webhooks';
import { fallbackRouteOf, toRow, type EventState } from '@mds/message-state';
import type { Cell, Column, ColumnType } from './schema.js';
import { eventTables } from './schema.js';
import type { PartitionFold } from './fold.js';
import { filterOf, type ReplayOptions } from './replay.js';
import { readLog } from './shards.js';
import { streamKeys, type StreamKey } from './streams.js';

export type ExportFormat = 'parquet' | 'csv';

const col = (name: string, type: ColumnType, source: string, personal = false): Column => ({
  name,
  type,
  personal,
  source,
});

/** The `events` table: one row per event of every stream, its own fields as protobuf JSON. */
export const EVENTS_COLUMNS: Column[] = [
  col('event_id', 'varchar', 'metadata.event_id'),
  col('stream_id', 'varchar', 'metadata.stream_id'),
  col('type', 'varchar', 'metadata.type'),
  col('occurred_at', 'timestamptz', 'metadata.occurred_at'),
  col('company_id', 'varchar', 'metadata.company_id'),
  col('producer', 'varchar', 'metadata.producer'),
  col('correlation_id', 'varchar', 'metadata.correlation_id'),
  col('causation_id', 'varchar', 'metadata.causation_id'),
  col('topic', 'varchar', 'the topic read'),
  col('partition', 'integer', 'its partition'),
  col('offset', 'bigint', 'its offset'),
  col('payload', 'json', 'the event (protobuf JSON), phone numbers and texts included', true),
  col('day', 'date', 'the UTC day of occurred_at (folder day=YYYY-MM-DD)'),
];

/** messages and requests: one row per message or request, as the gateway's read model stores it. */
export const STATE_COLUMNS: Column[] = [
  col('event_id', 'varchar', 'the public event_id of the message or request'),
  col('kind', 'varchar', 'message, change_phone or client_check'),
  col('company_id', 'varchar', 'the company'),
  col('state', 'varchar', 'new, sent, failed (messages); changed, rejected, checked (requests)'),
  col('accepted_at', 'timestamptz', 'when the gateway accepted it'),
  col('finished_at', 'timestamptz', 'when it reached its final state'),
  col('updated_at', 'timestamptz', 'its last event'),
  col('error_code', 'varchar', 'the public error code of a failure'),
  col('error_description', 'varchar', 'what failed'),
  col('messenger', 'varchar', messengerNames().join(' or ')),
  col('bot_name', 'varchar', 'the bot asked for ("" = the default)'),
  col('bot_id', 'varchar', 'the bot that sent it'),
  col('attempts', 'integer', 'sending attempts'),
  col('result', 'json', 'a request’s result (phones of a change, bots of a check)', true),
  col('history', 'json', 'its events in order (type, time)'),
  col('accepted_to_finished_ms', 'bigint', 'finished_at - accepted_at in ms'),
  col(
    'metadata',
    'json',
    'the request’s metadata (`values`; sealed with its personal data in `sealed`), null for none',
    true,
  ),
  col(
    'channel_messenger',
    'varchar',
    'a message with a fallback: the channel that decided it (while new, the one it is on); null without one',
  ),
  col('channel_bot_name', 'varchar', 'that channel’s bot ("" = the default, when none was named)'),
  col(
    'channel_attempts',
    'json',
    'a message with a fallback: the channels tried before it, in order (`[{service, bot_name, error_code}]`, as its webhook’s `attempts`)',
  ),
];

export const WEBHOOK_ATTEMPT_COLUMNS: Column[] = [
  col('webhook_id', 'varchar', 'the delivery (webhook-id header); stream of the webhook topic'),
  col('company_id', 'varchar', 'the company'),
  col('kind', 'varchar', 'what was delivered (message.status, request.result, ...)'),
  col('subject_id', 'varchar', 'the message or request it is about'),
  col('attempt', 'bigint', 'attempt number, from 1'),
  col('url', 'varchar', 'the endpoint'),
  col(
    'endpoint_id',
    'varchar',
    'which of the company’s endpoints (ep_default: the single URL of earlier versions)',
  ),
  col('status_code', 'bigint', 'HTTP status (0: no response)'),
  col('latency_ms', 'bigint', 'how long the endpoint took'),
  col('outcome', 'varchar', 'succeeded, retryable, gone or gave_up'),
  col('error', 'varchar', 'why it failed'),
  col('attempted_at', 'timestamptz', 'when'),
  col('next_attempt_at', 'timestamptz', 'when it is tried again'),
  col('topic', 'varchar', 'the topic read'),
  col('partition', 'integer', 'its partition'),
  col('offset', 'bigint', 'its offset'),
  col('delivery_outcome', 'varchar', 'how the delivery ended: delivered, abandoned, or pending'),
];

export const LINK_COLUMNS: Column[] = [
  col('company_id', 'varchar', 'the company'),
  col('phone_number', 'varchar', 'the client’s phone (after any phone change)', true),
  col('messenger', 'varchar', messengerNames().join(' or ')),
  col('bot_id', 'varchar', 'the bot'),
  col('chat_id', 'varchar', 'the person’s chat with the bot', true),
  col('user_id', 'varchar', 'the person’s messenger user id', true),
  col('state', 'varchar', 'linked or unlinked'),
  col('reachable', 'boolean', 'false once the person blocked the bot'),
  col('unreachable_reason', 'varchar', 'blocked, stopped, deactivated, send_rejected'),
  col('unlink_reason', 'varchar', 'why it was unlinked'),
  col('linked_at', 'timestamptz', 'first linked'),
  col('updated_at', 'timestamptz', 'its last event'),
];

/** The folded tables, each written whole by every export. */
export const FOLDED_TABLES: Record<string, Column[]> = {
  messages: STATE_COLUMNS,
  requests: STATE_COLUMNS,
  webhook_attempts: WEBHOOK_ATTEMPT_COLUMNS,
  links: LINK_COLUMNS,
};

const CHECKPOINT_DIR = '.mds-replay';
const CHECKPOINT = 'checkpoint.v8';

interface Checkpoint {
  version: 1;
  streams: StreamKey[];
  companyId: string | null;
  ends: Record<string, string>;
  folds: Record<string, PartitionFold>;
  exports: number;
}

export interface ExportOptions extends ReplayOptions {
  out: string;
  formats?: ExportFormat[];
  /** Streams to export (default: every stream). */
  streams?: readonly StreamKey[];
  /** Resume where the last export into `out` stopped and append what came since. */
  sinceLast?: boolean;
}

export interface ExportResult {
  events: number;
  skipped: number;
  /** Rows written per table (event tables: this run's; folded tables: all). */
  tables: Record<string, number>;
  /** Folders and files written, relative to out. */
  written: string[];
  /** This export continued the previous one. */
  resumed: boolean;
  trimmed: string[];
}

export class ExportError extends Error {
  override readonly name = 'ExportError';
}

const sqlString = (value: string) => `'${value.replaceAll("'", "''")}'`;
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

const DAY_MS = 86_400_000;

type Append = (a: DuckDBAppender, v: Cell) => void;
const APPEND: Record<ColumnType, Append> = {
  varchar: (a, v) => a.appendVarchar(String(v)),
  json: (a, v) => a.appendVarchar(String(v)),
  timestamptz: (a, v) => a.appendTimestampTZ(new DuckDBTimestampTZValue(BigInt(v as number) * 1000n)),
  date: (a, v) => a.appendDate(new DuckDBDateValue(Math.floor((v as number) / DAY_MS))),
  boolean: (a, v) => a.appendBoolean(Boolean(v)),
  integer: (a, v) => a.appendInteger(Number(v)),
  bigint: (a, v) => a.appendBigInt(BigInt(v as string | number)),
  double: (a, v) => a.appendDouble(Number(v)),
  blob: (a, v) => a.appendBlob(v as Uint8Array),
};

async function createTable(db: DuckDBConnection, name: string, columns: Column[], rows: Iterable<Cell[]>) {
  await db.run(
    `create table ${ident(name)} (${columns.map((c) => `${ident(c.name)} ${c.type}`).join(', ')})`,
  );
  const appender = await db.createAppender(name);
  const appends = columns.map((c) => APPEND[c.type]);
  let n = 0;
  for (const row of rows) {
    for (let i = 0; i < appends.length; i++) {
      const v = row[i];
      if (v === null || v === undefined) appender.appendNull();
      else appends[i]!(appender, v);
    }
    appender.endRow();
    n++;
  }
  appender.flushSync();
  appender.closeSync();
  return n;
}

const ms = (d: Date | null) => (d ? d.getTime() : null);

function stateRow(s: EventState): Cell[] {
  const r = toRow(s);
  // A message with a fallback: its channel (the current one while new, the one that decided it once ended) and
  // those tried before it, as its webhook names them.
  const route = fallbackRouteOf(s);
  const channel = route ? channelsOf(route) : undefined;
  return [
    r.event_id,
    r.kind,
    r.company_id,
    r.state,
    ms(r.accepted_at),
    ms(r.finished_at),
    ms(r.updated_at),
    r.error_code,
    r.error_description,
    r.messenger,
    r.bot_name,
    r.bot_id,
    r.attempts,
    r.result,
    r.history,
    r.accepted_at && r.finished_at ? r.finished_at.getTime() - r.accepted_at.getTime() : null,
    r.metadata,
    channel ? (channel.service ?? null) : null,
    channel ? (channel.bot_name ?? '') : null,
    channel ? JSON.stringify(channel.attempts) : null,
  ];
}

function* foldedRows(folds: Record<string, PartitionFold>, table: string): Generator<Cell[]> {
  for (const fold of Object.values(folds)) {
    if (table === 'messages' || table === 'requests')
      for (const s of fold.states?.values() ?? [])
        if ((s.kind === 'message') === (table === 'messages')) yield stateRow(s);
    if (table === 'webhook_attempts')
      for (const d of fold.webhooks?.values() ?? [])
        for (const a of d.attempts) yield [...a, d.outcome ?? 'pending'];
    if (table === 'links')
      for (const l of fold.links?.values() ?? [])
        yield [
          l.company_id,
          l.phone_number,
          l.messenger,
          l.bot_id,
          l.chat_id,
          l.user_id,
          l.state,
          l.reachable,
          l.unreachable_reason,
          l.unlink_reason,
          l.linked_at,
          l.updated_at,
        ];
  }
}

/** Which folded tables the streams exported feed. */
function foldedFor(streams: readonly StreamKey[]): string[] {
  const has = (s: StreamKey) => streams.includes(s);
  return [
    ...(has('message') ? ['messages'] : []),
    ...(has('clientRequest') ? ['requests'] : []),
    ...(has('webhook') ? ['webhook_attempts'] : []),
    ...(has('client') ? ['links'] : []),
  ];
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Owner-only permissions on everything under `dir` (DuckDB creates what it writes with the umask). */
async function ownerOnly(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await ownerOnly(path);
    else await chmod(path, 0o600);
  }
}

async function readCheckpoint(out: string): Promise<Checkpoint | undefined> {
  const file = join(out, CHECKPOINT_DIR, CHECKPOINT);
  if (!(await exists(file))) return undefined;
  const checkpoint = deserialize(await readFile(file)) as Checkpoint;
  if (checkpoint.version !== 1) throw new ExportError(`${file} is of an unknown version`);
  return checkpoint;
}

/**
 * Exports the streams as typed tables into `out` (see the module comment). Without `sinceLast`, `out` must
 * be empty, absent, or an earlier export (which it replaces).
 */
export async function exportLog(o: ExportOptions): Promise<ExportResult> {
  const formats = o.formats ?? ['parquet', 'csv'];
  const streams = o.streams ?? streamKeys();
  const out = resolve(o.out);
  // Files DuckDB creates get the umask's permissions: none for group and others from the start.
  const previousUmask = isMainThread ? process.umask(0o077) : undefined;
  try {
    let previous = o.sinceLast ? await readCheckpoint(out) : undefined;
    if (previous) {
      const same = (a: readonly string[], b: readonly string[]) =>
        [...a].sort().join() === [...b].sort().join();
      if (!same(previous.streams, streams))
        throw new ExportError(
          `${out} holds an export of streams ${previous.streams.join(', ')}; --since-last must export the same ones (asked: ${streams.join(', ')})`,
        );
      if (previous.companyId !== (o.companyId ?? null))
        throw new ExportError(
          `${out} holds an export of ${previous.companyId ? `company ${previous.companyId}` : 'every company'}; --since-last must export the same`,
        );
    } else if (await exists(out)) {
      const entries = await readdir(out);
      if (entries.length > 0 && !entries.includes(CHECKPOINT_DIR))
        throw new ExportError(
          `${out} is not empty and holds no mds-replay export; export into an empty folder`,
        );
      for (const entry of ['parquet', 'csv', CHECKPOINT_DIR])
        await rm(join(out, entry), { recursive: true, force: true });
      previous = undefined;
    }
    await mkdir(join(out, CHECKPOINT_DIR), { recursive: true, mode: 0o700 });
    const read = await readLog({
      settings: o.settings,
      streams,
      mode: 'export',
      filter: filterOf(o),
      ...(o.from && !previous ? { from: o.from } : {}),
      ...(previous ? { starts: previous.ends, prior: previous.folds } : {}),
      ...(o.threads !== undefined ? { threads: o.threads } : {}),
      ...(o.onProgress ? { onProgress: o.onProgress } : {}),
    });
    // One name per run, from where it starts: a run repeated after a crash rewrites its own files.
    const runId = createHash('sha256')
      .update(JSON.stringify(previous?.ends ?? { from: o.from?.toISOString() ?? null }))
      .digest('hex')
      .slice(0, 12);
    const instance = await DuckDBInstance.create(':memory:');
    const db = await instance.connect();
    const tables: Record<string, number> = {};
    const written: string[] = [];
    try {
      const typed = new Map([...eventTables().values()].map((t) => [t.name, t]));
      const partitioned: [string, Column[], Cell[][]][] = [
        ['events', EVENTS_COLUMNS, read.envelopes],
        ...[...typed.values()]
          .filter((t) => streams.includes(t.stream) && read.rows[t.name])
          .map((t): [string, Column[], Cell[][]] => [t.name, t.columns, read.rows[t.name]!]),
      ];
      const seen = new Set<string>();
      for (const [name, columns, rows] of partitioned) {
        if (seen.has(name) || rows.length === 0) continue;
        seen.add(name);
        tables[name] = await createTable(db, name, columns, rows);
        for (const format of formats) {
          const dir = join(out, format, name);
          await mkdir(join(out, format), { recursive: true });
          const options =
            format === 'parquet' ? 'format parquet, compression zstd' : 'format csv, header true';
          await db.run(
            `copy (select * from ${ident(name)} order by day, event_id) to ${sqlString(dir)} (${options}, partition_by (day), filename_pattern ${sqlString(`part_${runId}_{i}`)}, overwrite_or_ignore true)`,
          );
          written.push(`${format}/${name}/`);
        }
      }
      for (const name of foldedFor(streams)) {
        tables[name] = await createTable(db, name, FOLDED_TABLES[name]!, foldedRows(read.folds, name));
        for (const format of formats) {
          await mkdir(join(out, format), { recursive: true });
          const file = join(out, format, `${name}.${format}`);
          const options =
            format === 'parquet' ? '(format parquet, compression zstd)' : '(format csv, header true)';
          await db.run(`copy (select * from ${ident(name)} order by all) to ${sqlString(file)} ${options}`);
          written.push(`${format}/${name}.${format}`);
        }
      }
    } finally {
      db.closeSync();
      instance.closeSync();
    }
    const checkpoint: Checkpoint = {
      version: 1,
      streams: [...streams],
      companyId: o.companyId ?? null,
      ends: { ...(previous?.ends ?? {}), ...read.ends },
      folds: read.folds,
      exports: (previous?.exports ?? 0) + 1,
    };
    const file = join(out, CHECKPOINT_DIR, CHECKPOINT);
    await writeFile(`${file}.tmp`, serialize(checkpoint), { mode: 0o600 });
    await rename(`${file}.tmp`, file);
    await ownerOnly(out);
    return {
      events: read.events,
      skipped: read.skipped,
      tables,
      written,
      resumed: previous !== undefined,
      trimmed: read.trimmed,
    };
  } finally {
    if (previousUmask !== undefined) process.umask(previousUmask);
  }
}
