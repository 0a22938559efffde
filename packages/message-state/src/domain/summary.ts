import { apply, KIND, newLifecycle, type EventState, type Lifecycle, type StateRecord } from './state.js';

export interface LatencyFigures {
  /** Messages with both an accepted and a sent time. */
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface Summary {
  messages: {
    total: number;
    byState: Record<string, number>;
    byErrorCode: Record<string, number>;
    byMessenger: Record<string, number>;
    /** "<messenger>/<bot_name>", "(default)" when the request named no bot. */
    byBot: Record<string, number>;
    /** Milliseconds from accepted (the 202) to sent (the messenger took it). */
    acceptedToSentMs: LatencyFigures | null;
  };
  /** change_phone and client_check: "<kind>/<state>" -> count. */
  requests: Record<string, number>;
}

const bump = (counts: Record<string, number>, key: string) => {
  counts[key] = (counts[key] ?? 0) + 1;
};

/** Nearest-rank percentile of ascending values. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/**
 * The counts over message and request states, and the accepted -> sent latency of each sent message
 * (unsorted): what a shard of a replay sends to be merged with the others. `millis` reads a time.
 */
export function countStates<Time>(
  states: Iterable<Lifecycle<Time>>,
  millis: (time: Time) => number,
): { summary: Summary; latencies: number[] } {
  const messages: Summary['messages'] = {
    total: 0,
    byState: {},
    byErrorCode: {},
    byMessenger: {},
    byBot: {},
    acceptedToSentMs: null,
  };
  const requests: Record<string, number> = {};
  const latencies: number[] = [];
  for (const s of states) {
    if (s.kind !== 'message') {
      bump(requests, `${s.kind}/${s.status}`);
      continue;
    }
    messages.total++;
    bump(messages.byState, s.status);
    if (s.errorCode) bump(messages.byErrorCode, s.errorCode);
    bump(messages.byMessenger, s.messenger ?? '(unknown)');
    bump(messages.byBot, `${s.messenger ?? '(unknown)'}/${s.botName ?? '(default)'}`);
    if (s.status === 'sent' && s.acceptedAt !== null && s.finishedAt !== null)
      latencies.push(millis(s.finishedAt) - millis(s.acceptedAt));
  }
  return { summary: { messages, requests }, latencies };
}

/** What a summary counts of one message or request: its lifecycle, times in epoch milliseconds. */
export type SummaryState = Lifecycle<number>;

const millisOf = (date: Date): number => date.getTime();
const sameMillis = (ms: number): number => ms;

/**
 * Folds events into the lifecycles of their streams, as foldInto folds them into EventStates, for a
 * summary of millions of records: the same rules (`apply`) and times, without the history a read shows
 * and without a copy per event (the states are this fold's own). Without the history it cannot skip an
 * event applied before, and need not: applying one event again changes nothing counted here (an
 * acceptance sets the same values, an outcome applies only while the state is open).
 * Mutates and returns `states`.
 */
export function foldSummaryStates(
  states: Map<string, SummaryState>,
  records: Iterable<StateRecord>,
): Map<string, SummaryState> {
  for (const record of records) {
    const { streamId, occurredAt } = record.metadata;
    const state = states.get(streamId);
    if (state === undefined) {
      const at = occurredAt ? occurredAt.getTime() : 0;
      const fresh: SummaryState = newLifecycle(KIND[record.event.$case], at);
      apply(fresh, record, at, millisOf);
      states.set(streamId, fresh);
    } else {
      const at = occurredAt ? occurredAt.getTime() : state.updatedAt;
      if (at > state.updatedAt) state.updatedAt = at;
      apply(state, record, at, millisOf);
    }
  }
  return states;
}

/** The counts and latencies of summary states (see countStates). */
export const countSummaryStates = (states: Iterable<SummaryState>) => countStates(states, sameMillis);

/** The latency figures of accepted -> sent times (sorts `latencies` in place); null for none. */
export function latencyFigures(latencies: number[]): LatencyFigures | null {
  if (latencies.length === 0) return null;
  latencies.sort((a, b) => a - b);
  return {
    count: latencies.length,
    p50: percentile(latencies, 50),
    p90: percentile(latencies, 90),
    p99: percentile(latencies, 99),
    max: latencies[latencies.length - 1]!,
  };
}

/** Counts and latencies over message and request states. */
export function summarize(states: Iterable<EventState>): Summary {
  const { summary, latencies } = countStates(states, Date.parse);
  summary.messages.acceptedToSentMs = latencyFigures(latencies);
  return summary;
}
