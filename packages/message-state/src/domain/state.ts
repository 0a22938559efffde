import { fold, foldByStream } from '@mds/eventsourcing';
import {
  messengerNameOf,
  metadataEntries,
  type RequestMetadata as RequestMetadataEvent,
  type FoldFields,
  type FoldRecord,
  SealedPersonalData,
  type Messenger,
  FallbackRoute,
  routeAfter,
  type ClientRequestEvent,
  type Complete,
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
  /** Empty when the numbers are sealed (see `sealed`). */
  oldPhone: string;
  newPhone: string;
  /** Both numbers sealed under the old number's person's key, as ClientCheckResult's `sealed`. */
  sealed?: unknown;
  /** How many bot links moved; null until changed. */
  linksMoved: number | null;
}

export interface ClientCheckResult {
  /** Empty when the number is sealed (see `sealed`). */
  phoneNumber: string;
  /**
   * The number sealed under its person's key (SealedPersonalData as JSON): the state keeps it sealed, so a
   * forgotten person's reads as erased; the read API opens it (docs/personal-data.md).
   */
  sealed?: unknown;
  exists: boolean | null;
  bots: { messenger: string | null; botName: string; reachable: boolean }[];
}

/**
 * The `metadata` a request carried: the values in plain text (events from before sealing), or sealed with the
 * request's personal data (SealedPersonalData as JSON; the read API opens it, a forgotten person's reads `{}`).
 */
export interface RequestMetadata {
  values: Record<string, string>;
  sealed?: unknown;
}

/**
 * What the events of one message or request decide: its kind and status, when it was accepted and
 * finished, how, through which bot. The same rules (`apply`) fill it in whatever form its times take:
 * ISO text in EventState, epoch milliseconds in the summary's fold (summary.ts).
 */
export interface Lifecycle<Time> {
  kind: EventKind;
  status: EventStatus;
  /** When the gateway accepted the request (null if the replay started after it). */
  acceptedAt: Time | null;
  /** When it reached its terminal state (sent, failed, changed, rejected, checked). */
  finishedAt: Time | null;
  /** The latest occurred_at among its events. */
  updatedAt: Time;
  errorCode: string | null;
  errorDescription: string | null;
  /** Messages: the messenger asked for. */
  messenger: string | null;
  /** Messages: the bot named in the request (null: the messenger's default bot). */
  botName: string | null;
  /** Messages: the bot it went through, once routed. */
  botId: string | null;
  /** Messages: provider calls made, once finished. */
  attempts: number | null;
  /** change_phone and client_check: what was asked and what came out. */
  result: PhoneChangeResult | ClientCheckResult | null;
  /** The request's metadata; null when it carried none. */
  metadata: RequestMetadata | null;
  /**
   * Messages with a `fallback` (issue 35): where the message is among its channels (FallbackRoute as JSON): the
   * channel it is at while new, the one that decided it once ended (bot_name as resolved there), those left and
   * those tried. What a cancel names (MessageCancelRequested.fallback) and the read API shows. Null: no fallback.
   */
  fallback: unknown;
}

/**
 * The state of one message or request: the fold of its events. Plain JSON-able data (times are ISO
 * strings), so the projection row, the read API and the exports are all mappings of this one value.
 */
export interface EventState extends Lifecycle<string> {
  /** The public event_id (the stream id of its events). */
  eventId: string;
  companyId: string;
  /** Every distinct event applied, in the order applied (the log's order). */
  history: HistoryEntry[];
}

export type MessageRecord = Complete<MessageEvent>;
export type RequestRecord = Complete<ClientRequestEvent>;
/** The fields of each event the fold reads: `evolve` is typed on these, so it can read no other. */
export const MESSAGE_STATE_FIELDS = {
  messageAccepted: ['messenger', 'botName', 'requestMetadata', 'sealed', 'fallback'],
  messageSent: ['sentAt', 'botId', 'attempts', 'fallback'],
  messageDeliveryFailed: ['failedAt', 'errorCode', 'errorDescription', 'botId', 'attempts', 'fallback'],
  // Only in the history: a cancel decides nothing here (the sender's outcome does).
  messageCancelRequested: [],
  // A channel that could not reach the person: the message goes on to the next one.
  messageAttemptFailed: ['route', 'attempt'],
} as const satisfies FoldFields<MessageEvent>;

/**
 * What a summary's fold reads of the message stream: all but a request's metadata and a fallback's channels (a
 * summary counts neither, and reading metadata costs decoding each MessageAccepted whole: its `sealed` is a
 * nested message).
 */
export const MESSAGE_SUMMARY_FIELDS = {
  ...MESSAGE_STATE_FIELDS,
  messageAccepted: ['messenger', 'botName'],
  messageSent: ['sentAt', 'botId', 'attempts'],
  messageDeliveryFailed: ['failedAt', 'errorCode', 'errorDescription', 'botId', 'attempts'],
  messageAttemptFailed: [],
} as const satisfies FoldFields<MessageEvent>;

export const REQUEST_STATE_FIELDS = {
  phoneChangeRequested: ['oldPhone', 'newPhone', 'sealed', 'requestMetadata'],
  phoneChanged: ['oldPhone', 'newPhone', 'sealed', 'linksMoved'],
  phoneChangeRejected: ['errorCode', 'errorDescription'],
  clientCheckRequested: ['phoneNumber', 'sealed', 'requestMetadata'],
  clientChecked: ['phoneNumber', 'sealed', 'exists', 'bots'],
} as const satisfies FoldFields<ClientRequestEvent>;

/**
 * A record of either stream, whole or as a fold decodes it (codec.foldDecoder with the fields above):
 * the envelope's routing fields and the event's fields the fold reads.
 */
export type StateRecord =
  | FoldRecord<MessageEvent, typeof MESSAGE_STATE_FIELDS>
  | FoldRecord<ClientRequestEvent, typeof REQUEST_STATE_FIELDS>;

const EPOCH = '1970-01-01T00:00:00.000Z';

// A replay formats millions of times, mostly a few per second of log: the "YYYY-MM-DDTHH:MM:SS." part of
// the last second formatted is reused and only the milliseconds are appended (same text as toISOString).
const MILLIS = Array.from({ length: 1000 }, (_, ms) => `${String(ms).padStart(3, '0')}Z`);
const LAST_FOUR_DIGIT_YEAR_MS = 253_402_300_800_000;
let cachedSecond = Number.NaN;
let cachedPrefix = '';

/** date.toISOString(), faster for runs of dates within the same second. */
export function isoTime(date: Date): string {
  const ms = date.getTime();
  if (!(ms >= 0 && ms < LAST_FOUR_DIGIT_YEAR_MS)) return date.toISOString();
  const second = Math.floor(ms / 1000);
  if (second !== cachedSecond) {
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, 20);
    cachedSecond = second;
  }
  return cachedPrefix + MILLIS[ms - second * 1000]!;
}

export function messengerName(messenger: Messenger): string | null {
  return messengerNameOf(messenger) ?? null;
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
  const eventId = metadata.eventId;
  if (state !== undefined) {
    const history = state.history;
    for (let i = 0; i < history.length; i++) if (history[i]!.eventId === eventId) return state;
  }
  const at = metadata.occurredAt ? isoTime(metadata.occurredAt) : (state?.updatedAt ?? EPOCH);
  // Interned type names: a replay keeps millions of history entries.
  const entry: HistoryEntry = { type: TYPE_NAME[event.$case], at, eventId };
  // concat allocates exactly the entries' room (push would grow a copy by half again plus 16 slots).
  const history = state === undefined ? [entry] : state.history.concat(entry);
  // One object of one shape per event (a replay folds millions): built whole, then filled in below
  // before anyone else sees it.
  const next: EventState =
    state === undefined
      ? {
          eventId: metadata.streamId,
          companyId: metadata.companyId,
          ...newLifecycle(KIND[event.$case], at),
          history,
        }
      : {
          eventId: state.eventId,
          companyId: state.companyId,
          kind: state.kind,
          status: state.status,
          acceptedAt: state.acceptedAt,
          finishedAt: state.finishedAt,
          updatedAt: at > state.updatedAt ? at : state.updatedAt,
          errorCode: state.errorCode,
          errorDescription: state.errorDescription,
          messenger: state.messenger,
          botName: state.botName,
          botId: state.botId,
          attempts: state.attempts,
          result: state.result,
          metadata: state.metadata,
          fallback: state.fallback,
          history,
        };
  apply(next, record, at, isoTime);
  return next;
}

/** The lifecycle of a stream before its first event is applied: new, nothing known yet. */
export function newLifecycle<Time>(kind: EventKind, at: Time): Lifecycle<Time> {
  return {
    kind,
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
    metadata: null,
    fallback: null,
  };
}

type Case = StateRecord['event']['$case'];

export const KIND: Record<Case, EventKind> = {
  messageAccepted: 'message',
  messageSent: 'message',
  messageDeliveryFailed: 'message',
  messageCancelRequested: 'message',
  messageAttemptFailed: 'message',
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
  messageCancelRequested: 'MessageCancelRequested',
  messageAttemptFailed: 'MessageAttemptFailed',
  phoneChangeRequested: 'PhoneChangeRequested',
  phoneChanged: 'PhoneChanged',
  phoneChangeRejected: 'PhoneChangeRejected',
  clientCheckRequested: 'ClientCheckRequested',
  clientChecked: 'ClientChecked',
};

/**
 * Fills in what the event tells `next` (the state before it, or a fresh copy of it): an acceptance
 * ("requested" event) whenever it comes; an outcome only while the state is still open. `at` is the
 * event's time and `timeOf` turns the event's own times into the same form.
 */
export function apply<Time>(
  next: Lifecycle<Time>,
  record: StateRecord,
  at: Time,
  timeOf: (date: Date) => Time,
): void {
  const event = record.event;
  switch (event.$case) {
    case 'messageAccepted':
    case 'phoneChangeRequested':
    case 'clientCheckRequested':
      next.metadata = requestMetadataOf(event.value);
  }
  switch (event.$case) {
    case 'messageAccepted':
      next.acceptedAt = at;
      next.messenger = messengerName(event.value.messenger);
      next.botName = event.value.botName === '' ? null : event.value.botName;
      // A later step of the route (a replay may fold it first) knows more than the acceptance.
      if (event.value.fallback && next.fallback === null)
        next.fallback = FallbackRoute.toJSON(event.value.fallback);
      return;
    case 'phoneChangeRequested': {
      const linksMoved = (next.result as PhoneChangeResult | null)?.linksMoved ?? null;
      next.acceptedAt = at;
      next.result = {
        oldPhone: event.value.oldPhone,
        newPhone: event.value.newPhone,
        ...sealedOf(event.value.sealed),
        linksMoved,
      };
      return;
    }
    case 'clientCheckRequested':
      next.acceptedAt = at;
      next.result = next.result ?? {
        phoneNumber: event.value.phoneNumber,
        ...sealedOf(event.value.sealed),
        exists: null,
        bots: [],
      };
      return;
  }
  if (TERMINAL.has(next.status)) return;
  switch (event.$case) {
    case 'messageSent': {
      const v = event.value;
      next.status = 'sent';
      next.finishedAt = v.sentAt ? timeOf(v.sentAt) : at;
      next.botId = v.botId || next.botId;
      next.attempts = v.attempts;
      if (v.fallback) next.fallback = FallbackRoute.toJSON(v.fallback);
      return;
    }
    case 'messageDeliveryFailed': {
      const v = event.value;
      next.status = 'failed';
      next.finishedAt = v.failedAt ? timeOf(v.failedAt) : at;
      next.errorCode = v.errorCode;
      next.errorDescription = v.errorDescription;
      next.botId = v.botId || next.botId;
      next.attempts = v.attempts;
      if (v.fallback) next.fallback = FallbackRoute.toJSON(v.fallback);
      return;
    }
    case 'messageAttemptFailed': {
      const { route, attempt } = event.value;
      const after = route && attempt ? routeAfter(route, attempt) : undefined;
      // Only forwards: a step already passed (an older attempt read late) changes nothing.
      if (after && after.channel > fallbackChannel(next.fallback))
        next.fallback = FallbackRoute.toJSON(after);
      return;
    }
    case 'phoneChanged': {
      const v = event.value;
      next.status = 'changed';
      next.finishedAt = at;
      next.result = {
        oldPhone: v.oldPhone,
        newPhone: v.newPhone,
        ...sealedOf(v.sealed),
        linksMoved: v.linksMoved,
      };
      return;
    }
    case 'phoneChangeRejected':
      next.status = 'rejected';
      next.finishedAt = at;
      next.errorCode = event.value.errorCode;
      next.errorDescription = event.value.errorDescription;
      return;
    case 'clientChecked': {
      const v = event.value;
      next.status = 'checked';
      next.finishedAt = at;
      next.result = {
        phoneNumber: v.phoneNumber,
        ...sealedOf(v.sealed),
        exists: v.exists,
        bots: v.bots.map((b) => ({
          messenger: messengerName(b.messenger),
          botName: b.botName,
          reachable: b.reachable,
        })),
      };
      return;
    }
  }
}

/** The channel a state's route is at; -1 without one. */
const fallbackChannel = (fallback: unknown): number =>
  fallback === null ? -1 : FallbackRoute.fromJSON(fallback).channel;

/** A state's route as the events spell it (FallbackRoute); undefined for a message without a fallback. */
export const fallbackRouteOf = (state: Pick<Lifecycle<unknown>, 'fallback'>): FallbackRoute | undefined =>
  state.fallback === null ? undefined : FallbackRoute.fromJSON(state.fallback);

/** The state after the given events of one stream, in log order (undefined for none). */
export function foldState(records: Iterable<StateRecord>): EventState | undefined {
  return fold<StateRecord, EventState | undefined>(evolve, undefined, records);
}

const streamIdOf = (record: StateRecord) => record.metadata.streamId;

/**
 * Folds events of many streams into a map by public event_id: the way a projection and a replay apply
 * a batch. Mutates and returns `states`.
 */
export function foldInto(
  states: Map<string, EventState>,
  records: Iterable<StateRecord>,
): Map<string, EventState> {
  return foldByStream<StateRecord, EventState | undefined>(
    evolve,
    undefined,
    states,
    records,
    streamIdOf,
  ) as Map<string, EventState>;
}

/** The metadata of a request event: kept sealed when its seal holds some, as the numbers of a result are. */
function requestMetadataOf(value: {
  requestMetadata?: RequestMetadataEvent | undefined;
  sealed?: SealedPersonalData | undefined;
}): RequestMetadata | null {
  if (value.sealed?.hasRequestMetadata) return { values: {}, ...sealedOf(value.sealed) };
  const values = metadataEntries(value.requestMetadata);
  return values ? { values } : null;
}

const sealedOf = (sealed: SealedPersonalData | undefined): { sealed?: unknown } =>
  sealed ? { sealed: SealedPersonalData.toJSON(sealed) } : {};
