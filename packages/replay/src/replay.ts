import { topics, type ClientRequestEvent, type MessageEvent } from '@mds/contracts';
import { migrateUp, openDatabase } from '@mds/db';
import { readToEnd, topicName, type ConsumedEvent, type Kafka } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import {
  evolve,
  STATE_TABLE,
  summarize,
  type EventState,
  type StateRecord,
  type Summary,
} from '@mds/message-state';
import { eventStatesMigration, writeStates } from '@mds/message-state/store';

/** The streams message and request states are folded from. */
export const STATE_TOPICS = [topics.message, topics.clientRequest] as const;

export interface ReplayOptions {
  kafka: Kafka;
  logger: Logger;
  topicPrefix?: string;
  /** Start at the first event recorded at or after this time (default: the beginning of the log). */
  from?: Date;
  /** Only this company's events. */
  companyId?: string;
  /** Only events that occurred before this time. */
  to?: Date;
  onProgress?: (done: number, total: number) => void;
}

export type StateEvent = ConsumedEvent<MessageEvent | ClientRequestEvent>;

/**
 * The partitions (`topic/partition`) that no longer start at offset 0: retention has deleted their oldest
 * events, so a replay from the beginning sees only part of the history.
 */
export async function trimmedPartitions(o: Pick<ReplayOptions, 'kafka' | 'topicPrefix'>): Promise<string[]> {
  const admin = o.kafka.admin();
  await admin.connect();
  try {
    const trimmed: string[] = [];
    for (const spec of STATE_TOPICS) {
      const name = topicName(spec, o.topicPrefix);
      for (const p of await admin.fetchTopicOffsets(name))
        if (BigInt(p.low) > 0n) trimmed.push(`${name}/${p.partition}`);
    }
    return trimmed;
  } finally {
    await admin.disconnect();
  }
}

/**
 * Reads the message and request streams to their current end and folds every event into the state of
 * its message or request with the projection's own `evolve`. Events before `from` are not read: the
 * states are then the fold of what was read (an outcome without its acceptance, for example).
 */
export async function replayStates(
  o: ReplayOptions & { onEvents?: (events: StateEvent[]) => void | Promise<void> },
): Promise<{ events: number; states: Map<string, EventState> }> {
  const states = new Map<string, EventState>();
  let events = 0;
  const wanted = (e: StateEvent) =>
    (o.companyId === undefined || e.record.metadata.companyId === o.companyId) &&
    (o.to === undefined || (e.record.metadata.occurredAt?.getTime() ?? 0) < o.to.getTime());
  await readToEnd<MessageEvent | ClientRequestEvent>({
    kafka: o.kafka,
    logger: o.logger,
    topics: STATE_TOPICS,
    topicPrefix: o.topicPrefix,
    from: o.from,
    maxBatchSize: 5_000,
    onProgress: o.onProgress,
    handleBatch: async (batch) => {
      const kept = o.companyId === undefined && o.to === undefined ? batch : batch.filter(wanted);
      for (const e of kept) {
        const record = e.record as StateRecord;
        const id = record.metadata.streamId;
        states.set(id, evolve(states.get(id), record));
      }
      events += kept.length;
      if (o.onEvents && kept.length > 0) await o.onEvents(kept);
    },
  });
  return { events, states };
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
    await migrateUp(db, o.schema, [eventStatesMigration]);
    const { events, states } = await replayStates(o);
    const written = await writeStates(db, states.values());
    return { events, states: written };
  } finally {
    await db.destroy();
  }
}

/** The summary of every state read (see @mds/message-state summarize). */
export async function summaryOf(o: ReplayOptions): Promise<Summary & { events: number }> {
  const { events, states } = await replayStates(o);
  return { events, ...summarize(states.values()) };
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
