import type { EventKind, EventState, EventStatus, HistoryEntry } from './state.js';

/** The projection's table: one row per public event_id (messages and requests alike). */
export const STATE_TABLE = 'event_states';

/** A row as PostgreSQL gives it back (timestamptz as Date, jsonb parsed). */
export interface StateRow {
  event_id: string;
  kind: EventKind;
  company_id: string;
  state: EventStatus;
  accepted_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
  error_code: string | null;
  error_description: string | null;
  messenger: string | null;
  bot_name: string | null;
  bot_id: string | null;
  attempts: number | null;
  result: EventState['result'];
  history: HistoryEntry[];
  metadata: EventState['metadata'];
  fallback: EventState['fallback'];
}

/** A row as written: the jsonb columns as JSON text (pg would send a JS array as a PostgreSQL array). */
export type StateRowInput = Omit<StateRow, 'result' | 'history' | 'metadata' | 'fallback'> & {
  result: string | null;
  history: string;
  metadata: string | null;
  fallback: string | null;
};

const date = (value: string | null): Date | null => (value === null ? null : new Date(value));
const isoOf = (value: Date | null): string | null => (value === null ? null : value.toISOString());

export function toRow(s: EventState): StateRowInput {
  return {
    event_id: s.eventId,
    kind: s.kind,
    company_id: s.companyId,
    state: s.status,
    accepted_at: date(s.acceptedAt),
    finished_at: date(s.finishedAt),
    updated_at: new Date(s.updatedAt),
    error_code: s.errorCode,
    error_description: s.errorDescription,
    messenger: s.messenger,
    bot_name: s.botName,
    bot_id: s.botId,
    attempts: s.attempts,
    result: s.result === null ? null : JSON.stringify(s.result),
    history: JSON.stringify(s.history),
    metadata: s.metadata === null ? null : JSON.stringify(s.metadata),
    fallback: s.fallback === null ? null : JSON.stringify(s.fallback),
  };
}

/** The inverse of toRow: fromRow(read(toRow(s))) equals s, so a projection can fold on from its rows. */
export function fromRow(r: StateRow): EventState {
  return {
    eventId: r.event_id,
    kind: r.kind,
    companyId: r.company_id,
    status: r.state,
    acceptedAt: isoOf(r.accepted_at),
    finishedAt: isoOf(r.finished_at),
    updatedAt: r.updated_at.toISOString(),
    errorCode: r.error_code,
    errorDescription: r.error_description,
    messenger: r.messenger,
    botName: r.bot_name,
    botId: r.bot_id,
    attempts: r.attempts,
    result: r.result,
    metadata: r.metadata ?? null,
    fallback: r.fallback ?? null,
    history: r.history,
  };
}
