import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { DuckDBInstance, DuckDBTimestampTZValue, type DuckDBAppender } from '@duckdb/node-api';
import { toRow } from '@mds/message-state';
import { replayStates, type ReplayOptions, type StateEvent } from './replay.js';

export type ExportFormat = 'parquet' | 'csv';

const EVENTS_DDL = `create table events (
  event_id varchar, stream_id varchar, type varchar, occurred_at timestamptz, company_id varchar,
  producer varchar, correlation_id varchar, causation_id varchar,
  topic varchar, "partition" integer, "offset" bigint, payload json)`;

const STATES_DDL = `create table states (
  event_id varchar, kind varchar, company_id varchar, state varchar,
  accepted_at timestamptz, finished_at timestamptz, updated_at timestamptz,
  error_code varchar, error_description varchar, messenger varchar, bot_name varchar, bot_id varchar,
  attempts integer, result json, history json, accepted_to_finished_ms bigint)`;

const micros = (date: Date) => new DuckDBTimestampTZValue(BigInt(date.getTime()) * 1000n);

function text(appender: DuckDBAppender, value: string | null | undefined) {
  if (value === null || value === undefined) appender.appendNull();
  else appender.appendVarchar(value);
}

function time(appender: DuckDBAppender, value: Date | null | undefined) {
  if (!value) appender.appendNull();
  else appender.appendTimestampTZ(micros(value));
}

function appendEvent(appender: DuckDBAppender, e: StateEvent) {
  const m = e.record.metadata;
  text(appender, m.eventId);
  text(appender, m.streamId);
  text(appender, m.type);
  time(appender, m.occurredAt);
  text(appender, m.companyId);
  text(appender, m.producer);
  text(appender, m.correlationId);
  text(appender, m.causationId);
  text(appender, e.topic);
  appender.appendInteger(e.partition);
  appender.appendBigInt(BigInt(e.offset));
  // The event's own fields as protobuf JSON (the envelope is in the columns before it).
  const { metadata: _m, ...event } = e.spec.codec.toJSON(e.record) as Record<string, unknown>;
  text(appender, JSON.stringify(event));
  appender.endRow();
}

const sqlString = (value: string) => `'${value.replaceAll("'", "''")}'`;

/**
 * Exports the events read and the message and request states derived from them, as Parquet and/or
 * CSV files in `out`: events.parquet / events.csv (one row per event, the envelope in columns and the
 * event's fields as JSON) and states.parquet / states.csv (one row per message or request: the
 * projection's row, the same mapping the read model stores). Written by DuckDB.
 */
export async function exportEvents(
  o: ReplayOptions & { out: string; formats?: ExportFormat[] },
): Promise<{ events: number; states: number; files: string[] }> {
  const formats = o.formats ?? ['parquet', 'csv'];
  const out = resolve(o.out);
  await mkdir(out, { recursive: true });
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    await connection.run(EVENTS_DDL);
    await connection.run(STATES_DDL);
    const events = await connection.createAppender('events');
    const { states } = await replayStates({
      ...o,
      onEvents: (batch) => {
        for (const e of batch) appendEvent(events, e);
      },
    });
    events.flushSync();
    events.closeSync();
    const rows = await connection.createAppender('states');
    for (const state of states.values()) {
      const r = toRow(state);
      text(rows, r.event_id);
      text(rows, r.kind);
      text(rows, r.company_id);
      text(rows, r.state);
      time(rows, r.accepted_at);
      time(rows, r.finished_at);
      time(rows, r.updated_at);
      text(rows, r.error_code);
      text(rows, r.error_description);
      text(rows, r.messenger);
      text(rows, r.bot_name);
      text(rows, r.bot_id);
      if (r.attempts === null) rows.appendNull();
      else rows.appendInteger(r.attempts);
      text(rows, r.result);
      text(rows, r.history);
      if (r.accepted_at && r.finished_at)
        rows.appendBigInt(BigInt(r.finished_at.getTime() - r.accepted_at.getTime()));
      else rows.appendNull();
      rows.endRow();
    }
    rows.flushSync();
    rows.closeSync();
    const files: string[] = [];
    for (const name of ['events', 'states']) {
      for (const format of formats) {
        const file = join(out, `${name}.${format}`);
        const options =
          format === 'parquet' ? '(format parquet, compression zstd)' : '(format csv, header true)';
        await connection.run(`copy (select * from ${name} order by 1) to ${sqlString(file)} ${options}`);
        files.push(file);
      }
    }
    const counted = await connection.runAndReadAll(
      'select (select count(*) from events), (select count(*) from states)',
    );
    const [eventCount, stateCount] = counted.getRows()[0] as [bigint, bigint];
    return { events: Number(eventCount), states: Number(stateCount), files };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
