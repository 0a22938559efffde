import {
  Messenger,
  type ClientRequestEvent,
  type Complete,
  type EventMetadata,
  type MessageEvent,
} from '@mds/contracts';

/** What an `event_id` the gateway handed out names. */
export type EventKind = 'message' | 'change_phone' | 'client_check';

/**
 * The public state of each kind:
 * - message: `new` -> `sent` | `failed`
 * - change_phone: `new` -> `changed` | `rejected`
 * - client_check: `new` -> `checked`
 */
export type EventStatus = 'new' | 'sent' | 'failed' | 'changed' | 'rejected' | 'checked';

export const TERMINAL: ReadonlySet<EventStatus> = new Set([
  'sent',
  'failed',
  'changed',
  'rejected',
  'checked',
]);

/** One event of the stream, as the read API shows it. */
export interface HistoryEntry {
  /** Event type name, e.g. "MessageAccepted". */
  type: string;
  /** The event's occurred_at, ISO 8601. */
  at: string;
  /** The event's own id (its envelope's event_id, not the public id of the message). */
  eventId: string;
}

export interface PhoneChangeResult {
  oldPhone: string;
  newPhone: string;
  /** How many bot links moved; null until changed. */
  linksMoved: number | null;
}

export interface ClientCheckResult {
  phoneNumber: string;
  exists: boolean | null;
  bots: { messenger: 'telegram' | 'max' | null; botName: string; reachable: boolean }[];
}

/**
 * The state of one message or request: the fold of its events. Plain JSON-able data (times are ISO
 * strings), so the projection row, the read API and the exports are all mappings of this one value.
 */
export interface EventState {
  /** The public event_id (the stream id of its events). */
  eventId: string;
  kind: EventKind;
  companyId: string;
  status: EventStatus;
  /** When the gateway accepted the request (null if the replay started after it). */
  acceptedAt: string | null;
  /** When it reached its terminal state (sent, failed, changed, rejected, checked). */
  finishedAt: string | null;
  /** The latest occurred_at among its events. */
  updatedAt: string;
  errorCode: string | null;
  errorDescription: string | null;
  /** Messages: the messenger asked for. */
  messenger: 'telegram' | 'max' | null;
  /** Messages: the bot named in the request (null: the messenger's default bot). */
  botName: string | null;
  /** Messages: the bot it went through, once routed. */
  botId: string | null;
  /** Messages: provider calls made, once finished. */
  attempts: number | null;
  /** change_phone and client_check: what was asked and what came out. */
  result: PhoneChangeResult | ClientCheckResult | null;
  /** Every distinct event applied, in the order applied (the log's order). */
  history: HistoryEntry[];
}

export type MessageRecord = Complete<MessageEvent>;
export type RequestRecord = Complete<ClientRequestEvent>;
export type StateRecord = MessageRecord | RequestRecord;

const EPOCH = '1970-01-01T00:00:00.000Z';
const iso = (date: Date | undefined): string | null => (date ? date.toISOString() : null);

export function messengerName(messenger: Messenger): 'telegram' | 'max' | null {
  if (messenger === Messenger.MESSENGER_TELEGRAM) return 'telegram';
  if (messenger === Messenger.MESSENGER_MAX) return 'max';
  return null;
}

function initial(metadata: EventMetadata, kind: EventKind, at: string): EventState {
  return {
    eventId: metadata.streamId,
    kind,
    companyId: metadata.companyId,
    status: 'new',
    acceptedAt: null,
    finishedAt: null,
    updatedAt: at,
    errorCode: null,
    errorDescription: null,
    messenger: null,
    botName: null,
    botId: null,
    attempts: null,
    result: null,
    history: [],
  };
}

/**
 * Applies one event. Total and idempotent: an event already applied (same envelope event_id) changes
 * nothing, so duplicates from Kafka's at-least-once delivery are harmless. Monotonic: the first terminal
 * event decides the outcome (no state leaves sent, failed, changed, rejected or checked); a later one is
 * only recorded in the history. An event of a request arriving before its "requested" event (a replay
 * started between them) is applied all the same; the requested event fills in what it knows when it comes.
 */
export function evolve(state: EventState | undefined, record: StateRecord): EventState {
  const { metadata, event } = record;
  if (state !== undefined) {
    for (const h of state.history) if (h.eventId === metadata.eventId) return state;
  }
  const at = iso(metadata.occurredAt) ?? state?.updatedAt ?? EPOCH;
  const base = state ?? initial(metadata, KIND[event.$case], at);
  const open = !TERMINAL.has(base.status);
  const changes = open ? outcome(base, record, at) : undefined;
  return {
    ...base,
    ...requested(base, record, at),
    ...changes,
    updatedAt: at > base.updatedAt ? at : base.updatedAt,
    // Interned type names: a replay keeps millions of history entries.
    history: [...base.history, { type: TYPE_NAME[event.$case], at, eventId: metadata.eventId }],
  };
}

type Case = StateRecord['event']['$case'];

const KIND: Record<Case, EventKind> = {
  messageAccepted: 'message',
  messageSent: 'message',
  messageDeliveryFailed: 'message',
  phoneChangeRequested: 'change_phone',
  phoneChanged: 'change_phone',
  phoneChangeRejected: 'change_phone',
  clientCheckRequested: 'client_check',
  clientChecked: 'client_check',
};

const TYPE_NAME: Record<Case, string> = {
  messageAccepted: 'MessageAccepted',
  messageSent: 'MessageSent',
  messageDeliveryFailed: 'MessageDeliveryFailed',
  phoneChangeRequested: 'PhoneChangeRequested',
  phoneChanged: 'PhoneChanged',
  phoneChangeRejected: 'PhoneChangeRejected',
  clientCheckRequested: 'ClientCheckRequested',
  clientChecked: 'ClientChecked',
};

/** What an acceptance ("requested" event) tells, whenever it comes. */
function requested(base: EventState, record: StateRecord, at: string): Partial<EventState> | undefined {
  const event = record.event;
  switch (event.$case) {
    case 'messageAccepted':
      return {
        acceptedAt: at,
        messenger: messengerName(event.value.messenger),
        botName: event.value.botName === '' ? null : event.value.botName,
      };
    case 'phoneChangeRequested': {
      const linksMoved = (base.result as PhoneChangeResult | null)?.linksMoved ?? null;
      return {
        acceptedAt: at,
        result: { oldPhone: event.value.oldPhone, newPhone: event.value.newPhone, linksMoved },
      };
    }
    case 'clientCheckRequested':
      return {
        acceptedAt: at,
        result: base.result ?? {
          phoneNumber: event.value.phoneNumber,
          exists: null,
          bots: [],
        },
      };
    default:
      return undefined;
  }
}

/** What an outcome event decides, applied only while the state is still open. */
function outcome(base: EventState, record: StateRecord, at: string): Partial<EventState> | undefined {
  const event = record.event;
  switch (event.$case) {
    case 'messageSent': {
      const v = event.value;
      return {
        status: 'sent',
        finishedAt: iso(v.sentAt) ?? at,
        botId: v.botId || base.botId,
        attempts: v.attempts,
      };
    }
    case 'messageDeliveryFailed': {
      const v = event.value;
      return {
        status: 'failed',
        finishedAt: iso(v.failedAt) ?? at,
        errorCode: v.errorCode,
        errorDescription: v.errorDescription,
        botId: v.botId || base.botId,
        attempts: v.attempts,
      };
    }
    case 'phoneChanged': {
      const v = event.value;
      return {
        status: 'changed',
        finishedAt: at,
        result: { oldPhone: v.oldPhone, newPhone: v.newPhone, linksMoved: v.linksMoved },
      };
    }
    case 'phoneChangeRejected':
      return {
        status: 'rejected',
        finishedAt: at,
        errorCode: event.value.errorCode,
        errorDescription: event.value.errorDescription,
      };
    case 'clientChecked': {
      const v = event.value;
      return {
        status: 'checked',
        finishedAt: at,
        result: {
          phoneNumber: v.phoneNumber,
          exists: v.exists,
          bots: v.bots.map((b) => ({
            messenger: messengerName(b.messenger),
            botName: b.botName,
            reachable: b.reachable,
          })),
        },
      };
    }
    default:
      return undefined;
  }
}

/** The state after the given events of one stream, in log order (undefined for none). */
export function foldState(records: Iterable<StateRecord>): EventState | undefined {
  let state: EventState | undefined;
  for (const record of records) state = evolve(state, record);
  return state;
}

/**
 * Folds events of many streams into a map by public event_id: the way a projection and a replay apply
 * a batch. Mutates and returns `states`.
 */
export function foldInto(
  states: Map<string, EventState>,
  records: Iterable<StateRecord>,
): Map<string, EventState> {
  for (const record of records) {
    const id = record.metadata.streamId;
    states.set(id, evolve(states.get(id), record));
  }
  return states;
}
