import { migrateUp, openDatabase } from '@mds/db';
import type { KafkaSettings } from '@mds/kafka';
import { latencyFigures, STATE_TABLE, summarize, type EventState, type Summary } from '@mds/message-state';
import { eventStatesMigrations, writeStates } from '@mds/message-state/store';
import { STATE_STREAMS, type SummaryPart } from './fold.js';
import { readLog } from './shards.js';

export interface ReplayOptions {
  /** The broker and the topic prefix; each reading thread makes its own client from them. */
  settings: KafkaSettings;
  /** Start at the first event recorded at or after this time (default: the beginning of the log). */
  from?: Date;
  /** Only this company's events. */
  companyId?: string;
  /** Only events that occurred before this time. */
  to?: Date;
  /** Worker threads reading and decoding (default: one per core; 0: this thread). */
  threads?: number;
  onProgress?: (done: number, total: number) => void;
  /** Told the partitions whose oldest events retention has deleted (the fold sees only the rest). */
  onTrimmed?: (partitions: string[]) => void;
}

export const filterOf = (o: Pick<ReplayOptions, 'companyId' | 'to'>) => ({
  ...(o.companyId !== undefined ? { companyId: o.companyId } : {}),
  ...(o.to ? { toMs: o.to.getTime() } : {}),
});

/** Reads the message and request streams with the options given, telling `onTrimmed` what is gone. */
async function readStateStreams(o: ReplayOptions, mode: 'fold' | 'summary') {
  const read = await readLog({
    settings: o.settings,
    streams: STATE_STREAMS,
    mode,
    filter: filterOf(o),
    ...(o.from ? { from: o.from } : {}),
    ...(o.threads !== undefined ? { threads: o.threads } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  });
  if (read.trimmed.length > 0) o.onTrimmed?.(read.trimmed);
  return read;
}

/**
 * Reads the message and request streams to their current end and folds every event into the state of
 * its message or request with the projection's own `evolve`, in worker threads sharded by partition.
 * Events before `from` are not read: the states are then the fold of what was read (an outcome without
 * its acceptance, for example).
 */
export async function replayStates(
  o: ReplayOptions,
): Promise<{ events: number; skipped: number; states: Map<string, EventState> }> {
  const read = await readStateStreams(o, 'fold');
  const folds = Object.values(read.folds);
  // One shard's map is the result as it is; several are merged (their keys never overlap).
  const maps = folds.flatMap((f) => (f.states ? [f.states] : []));
  const states = maps.length === 1 ? maps[0]! : new Map<string, EventState>();
  if (maps.length > 1) for (const m of maps) for (const [k, v] of m) states.set(k, v);
  return { events: read.events, skipped: read.skipped, states };
}

export class NotFreshError extends Error {
  override readonly name = 'NotFreshError';
}

/**
 * Rebuilds the gateway's read model (table event_states) from the log into `schema`, which must not
 * already hold one: point the gateway at it (or rename it into place) once it is complete.
 */
export async function rebuildEventStates(
  o: ReplayOptions & { databaseUrl: string; schema: string },
): Promise<{ events: number; states: number }> {
  const db = await openDatabase({ url: o.databaseUrl, schema: o.schema, applicationName: 'mds-replay' });
  try {
    const exists = await db.schema.hasTable(STATE_TABLE);
    if (exists && (await db(STATE_TABLE).first())) {
      throw new NotFreshError(
        `schema ${o.schema} already has a non-empty ${STATE_TABLE}; rebuild into a fresh one`,
      );
    }
    await migrateUp(db, o.schema, eventStatesMigrations);
    const { events, states } = await replayStates(o);
    const written = await writeStates(db, states.values());
    return { events, states: written };
  } finally {
    await db.destroy();
  }
}

const addCounts = (into: Record<string, number>, from: Record<string, number>) => {
  for (const [k, n] of Object.entries(from)) into[k] = (into[k] ?? 0) + n;
};

/** The summaries of shards as one: counts added, percentiles over every shard's latencies. */
export function mergeSummaries(parts: SummaryPart[]): Summary {
  const merged = summarize([]);
  const latencies: number[] = [];
  for (const { summary, acceptedToSentMs } of parts) {
    const m = summary.messages;
    merged.messages.total += m.total;
    addCounts(merged.messages.byState, m.byState);
    addCounts(merged.messages.byErrorCode, m.byErrorCode);
    addCounts(merged.messages.byMessenger, m.byMessenger);
    addCounts(merged.messages.byBot, m.byBot);
    addCounts(merged.requests, summary.requests);
    for (const ms of acceptedToSentMs) latencies.push(ms);
  }
  merged.messages.acceptedToSentMs = latencyFigures(latencies);
  return merged;
}

/**
 * The summary of every state read (see @mds/message-state summarize): each shard summarises its own
 * states and sends only that (counts and latencies), which are merged here.
 */
export async function summaryOf(o: ReplayOptions): Promise<Summary & { events: number }> {
  const read = await readStateStreams(o, 'summary');
  return { events: read.events, ...mergeSummaries(read.summaries) };
}

const table = (title: string, counts: Record<string, number>) => {
  const rows = Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (rows.length === 0) return `${title}: none`;
  const width = Math.max(...rows.map(([k]) => k.length));
  return [`${title}:`, ...rows.map(([k, n]) => `  ${k.padEnd(width)}  ${n}`)].join('\n');
};

/** The summary as text for a terminal. */
export function formatSummary(s: Summary & { events: number }): string {
  const latency = s.messages.acceptedToSentMs;
  return [
    `events read: ${s.events}`,
    `messages: ${s.messages.total}`,
    table('by state', s.messages.byState),
    table('by error_code', s.messages.byErrorCode),
    table('by messenger', s.messages.byMessenger),
    table('by bot (messenger/bot_name)', s.messages.byBot),
    latency
      ? `accepted -> sent (${latency.count} messages): p50 ${latency.p50} ms, p90 ${latency.p90} ms, p99 ${latency.p99} ms, max ${latency.max} ms`
      : 'accepted -> sent: no sent message with its acceptance in range',
    table('requests (kind/state)', s.requests),
  ].join('\n');
}
