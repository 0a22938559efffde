import { DomainError, handle, type Decider } from '@mds/eventsourcing';
import { messageErrorCodes, type CleanText } from '@mds/contracts';
import { backoffMs, nextStep, type AttemptResult, type RetryPolicy, type Unreachable } from './attempt.js';

/** What a message came to: its one outcome. */
export type Decided =
  | { kind: 'sent'; providerMessageId: string }
  | { kind: 'failed'; code: string; description: string; unreachable?: Unreachable };

/** What the rules need of a message's journal row (read by the sender: the row itself stays outside). */
export interface RowFacts {
  status: 'scheduled' | 'pending' | 'sending' | 'sent' | 'failed';
  seq: bigint;
  attempts: number;
  failures: number;
  notBeforeMs: number;
  /** Claimed by this replica. */
  claimedByUs: boolean;
  /** A claim older than the abandon window: whoever made it has surely stopped. */
  claimAbandoned: boolean;
}

/**
 * A journal write a decision left to do: store the outcome (on our claim, or on an abandoned one), or give
 * the message back for a retry. It stays due until the journal answers, so a turn the database
 * interrupted is finished by the next one, with the same outcome.
 */
export type Due =
  | { kind: 'store'; decided: Decided; attempts: number; atMs: number; abandonedClaim: boolean }
  | { kind: 'give-back'; atMs: number; failed: boolean };

/**
 * Where one message stands in this replica. `open`: waits for its turn (in memory, or parked in the
 * journal); `claimed`: ours for one call; `watched`: claimed by a process that may be gone, failed as
 * unconfirmed once that claim is abandoned; `done`: decided (here, or known decided), nothing left to do
 * here; `lost`: another replica claimed it, whose call may yet give it back.
 */
export interface DeliveryState {
  status: 'unread' | 'open' | 'claimed' | 'watched' | 'done' | 'lost';
  /** The delivery deadline, or the message's expiry if that comes first. */
  deadlineMs: number;
  /** The message's expiry (ttl_seconds): never sent after it, failed EXPIRED. */
  expiresAtMs?: number;
  /** Not to be started before. */
  notBeforeMs: number;
  /** It has a journal row already (parked, or given back for a retry): a claim updates it. */
  parked: boolean;
  /** Its row's place among the bot's parked messages. */
  seq?: bigint;
  failures: number;
  /** The last transient error, for the description if the deadline passes. */
  lastError?: string;
  /** A claim of it may or may not have been stored (the database went away): one of ours, with no call made. */
  claimUncertain: boolean;
  /** The attempt number of the claim in hand. */
  attempts: number;
  due?: Due;
}

/** The facts of an answer the retry rules weigh (see nextStep). */
export interface AnswerFacts {
  nowMs: number;
  /** Consecutive flood answers of this bot before this one. */
  botFloods: number;
  random: number;
  policy: RetryPolicy;
  unconfirmed: 'fail' | 'retry';
}

/** The expiry a message's work order carries, if it has one. */
export interface Expiry {
  expiresAtMs?: number | undefined;
}

export type DeliveryCommand =
  /** Read from the log, new to the journal. */
  | ({ type: 'Arrive'; deadlineMs: number } & Expiry)
  /** Read from its journal row (parked, or claimed by a process that may be gone). */
  | ({ type: 'Load'; row: RowFacts; deadlineMs: number; nowMs: number; recheckMs: number } & Expiry)
  | { type: 'NoteCredentialsUnavailable'; error: string; nowMs: number; random: number; policy: RetryPolicy }
  /** The journal's answer to a claim: the attempt number, the row there already (if read), or nothing. */
  | {
      type: 'RecordClaim';
      answer: { kind: 'claimed'; attempts: number } | { kind: 'row'; row: RowFacts } | { kind: 'none' };
      nowMs: number;
      recheckMs: number;
    }
  /** A claim whose answer the database lost. */
  | { type: 'NoteClaimUnanswered' }
  /** Claimed after its deadline passed while it waited: no call at all. */
  | { type: 'Expire'; nowMs: number }
  | ({ type: 'RecordAnswer'; result: AttemptResult<CleanText> } & AnswerFacts)
  /** A watched claim's turn: failed as unconfirmed if the journal finds it abandoned. */
  | { type: 'CheckOrphan'; nowMs: number }
  /** The journal's answer to the due write; when an outcome was not stored, the row it holds instead. */
  | { type: 'RecordWrite'; written: boolean; row?: RowFacts; nowMs: number; recheckMs: number }
  /** A journal step failed (the database is away): the message tries again shortly. */
  | { type: 'Interrupt'; nowMs: number };

export type DeliveryEvent =
  | ({ type: 'Arrived'; deadlineMs: number } & Expiry)
  | ({
      type: 'Loaded';
      deadlineMs: number;
      seq: bigint;
      failures: number;
      notBeforeMs: number;
      watched: boolean;
    } & Expiry)
  | { type: 'CredentialsUnavailable'; error: string; notBeforeMs: number }
  | { type: 'Claimed'; attempts: number }
  | { type: 'ClaimUnanswered' }
  /** Its claim failed: decided meanwhile, or another replica's now. */
  | { type: 'ClaimLost' }
  /** Its row holds an outcome already: that one is published again. */
  | { type: 'AlreadyDecided' }
  /** Its row is parked: the journal keeps it, so its Kafka offsets may move on. */
  | { type: 'Parked'; seq: bigint; failures: number; notBeforeMs: number }
  | { type: 'Watched'; notBeforeMs: number }
  | { type: 'Decided'; decided: Decided; attempts: number; atMs: number; abandonedClaim: boolean }
  | { type: 'RetryPlanned'; atMs: number; failed: boolean; error?: string; pauseBotUntilMs?: number }
  | { type: 'OutcomeStored' }
  | { type: 'GivenBack'; atMs: number }
  /** Nothing is left of it here: the journal holds no row, or another owner took the claim over. */
  | { type: 'Dropped' }
  | { type: 'Interrupted'; notBeforeMs: number };

/** How soon a turn the database interrupted is tried again. */
export const INTERRUPTED_RETRY_MS = 1_000;

export const unreadDelivery = (): DeliveryState => ({
  status: 'unread',
  deadlineMs: 0,
  notBeforeMs: 0,
  parked: false,
  failures: 0,
  claimUncertain: false,
  attempts: 0,
});

const decidedEvent = (
  decided: Decided,
  attempts: number,
  atMs: number,
  abandonedClaim: boolean,
): DeliveryEvent => ({
  type: 'Decided',
  decided,
  attempts,
  atMs,
  abandonedClaim,
});

/** What a row found in the journal says became of the message. */
function adopt(row: RowFacts, nowMs: number, recheckMs: number): DeliveryEvent[] {
  if (row.status === 'sent' || row.status === 'failed') return [{ type: 'AlreadyDecided' }];
  if (row.status === 'pending' || row.status === 'scheduled')
    // Parked (by an owner before a rebalance, given back for a retry, or held until its send_at): the
    // journal holds it now.
    return [{ type: 'Parked', seq: row.seq, failures: row.failures, notBeforeMs: row.notBeforeMs }];
  // Claimed: by a process that may be gone, or by this one's lane of before a rebalance, still calling.
  return [{ type: 'Watched', notBeforeMs: row.claimAbandoned ? 0 : nowMs + recheckMs }];
}

/**
 * Ours for a call, the last step before it: a message whose expiry passed meanwhile (a slow claim, a wait
 * for the bot's credentials) is decided EXPIRED at once, with no call.
 */
function claimedNow(attempts: number, state: DeliveryState, nowMs: number): DeliveryEvent[] {
  const claimed: DeliveryEvent = { type: 'Claimed', attempts };
  if (!expiredAt(state, nowMs)) return [claimed];
  return [claimed, decidedEvent(expired(state), attempts, nowMs, false)];
}

function decideClaim(
  command: Extract<DeliveryCommand, { type: 'RecordClaim' }>,
  state: DeliveryState,
): DeliveryEvent[] {
  const { answer } = command;
  if (answer.kind === 'claimed') return claimedNow(answer.attempts, state, command.nowMs);
  // A claim of ours whose answer was lost: stored, with no call made for it. It is still ours to use.
  if (
    answer.kind === 'row' &&
    state.claimUncertain &&
    answer.row.status === 'sending' &&
    answer.row.claimedByUs
  )
    return claimedNow(answer.row.attempts, state, command.nowMs);
  if (state.parked) return [{ type: 'ClaimLost' }];
  if (answer.kind === 'row') return adopt(answer.row, command.nowMs, command.recheckMs);
  // Another replica wrote its row this very moment: see what became of it a little later.
  return [{ type: 'Watched', notBeforeMs: command.nowMs + command.recheckMs }];
}

/** Past its expiry (ttl_seconds) at `nowMs`: it is never sent. */
export const expiredAt = (state: Pick<DeliveryState, 'expiresAtMs'>, nowMs: number): boolean =>
  state.expiresAtMs !== undefined && nowMs >= state.expiresAtMs;

/** Its deadline is its expiry (ttl_seconds), not the usual delivery deadline: passing it ends it EXPIRED. */
export const expiryBinds = (state: Pick<DeliveryState, 'deadlineMs' | 'expiresAtMs'>): boolean =>
  state.expiresAtMs !== undefined && state.expiresAtMs <= state.deadlineMs;

const expired = (state: Pick<DeliveryState, 'lastError'>): Decided => ({
  kind: 'failed',
  code: 'EXPIRED',
  description: `${messageErrorCodes.EXPIRED}${state.lastError ? `; last error: ${state.lastError}` : ''}`,
});

/** The outcome of a message whose deadline passed while it waited (for a retry after failures, or its turn). */
export function pastDeadline(
  state: Pick<DeliveryState, 'failures' | 'lastError' | 'deadlineMs' | 'expiresAtMs'>,
): Decided {
  if (expiryBinds(state)) return expired(state);
  if (state.failures > 0)
    return {
      kind: 'failed',
      code: 'PROVIDER_ERROR',
      description: `the messenger kept failing until the delivery deadline${state.lastError ? `; last error: ${state.lastError}` : ''}`,
    };
  if (state.lastError)
    return {
      kind: 'failed',
      code: 'PROVIDER_ERROR',
      description: `the bot's credentials could not be read until the delivery deadline; last error: ${state.lastError}`,
    };
  return {
    kind: 'failed',
    code: 'RATE_LIMITED_PAST_DEADLINE',
    description: 'the message waited for its turn past its delivery deadline',
  };
}

const UNCONFIRMED_ORPHAN: Decided = {
  kind: 'failed',
  code: 'DELIVERY_UNCONFIRMED',
  description:
    'the sender stopped while the messenger was handling this message; it may have reached the person and is not sent again, to avoid a duplicate',
};

function decideAnswer(
  command: Extract<DeliveryCommand, { type: 'RecordAnswer' }>,
  state: DeliveryState,
): DeliveryEvent[] {
  const { result } = command;
  const failed = result.kind === 'transient' || result.kind === 'unconfirmed';
  const step = nextStep(result, {
    nowMs: command.nowMs,
    deadlineMs: state.deadlineMs,
    expiryBinds: expiryBinds(state),
    failures: state.failures + (failed ? 1 : 0),
    botFloods: command.botFloods + 1,
    random: command.random,
    policy: command.policy,
    unconfirmed: command.unconfirmed,
  });
  if (step.kind !== 'retry') return [decidedEvent(step, state.attempts, command.nowMs, false)];
  return [
    {
      type: 'RetryPlanned',
      atMs: step.atMs,
      failed,
      ...(failed ? { error: result.description } : {}),
      ...(step.pauseBotUntilMs ? { pauseBotUntilMs: step.pauseBotUntilMs } : {}),
    },
  ];
}

function decideWrite(command: Extract<DeliveryCommand, { type: 'RecordWrite' }>, due: Due): DeliveryEvent[] {
  if (command.written)
    return [due.kind === 'store' ? { type: 'OutcomeStored' } : { type: 'GivenBack', atMs: due.atMs }];
  // Not stored: another owner decided it (it took our claim over as abandoned), or, for an abandoned claim
  // of another, it was decided or given back meanwhile, or is not that old yet. The row says which.
  if (due.kind === 'store' && command.row) return adopt(command.row, command.nowMs, command.recheckMs);
  return [{ type: 'Dropped' }];
}

const requireStatus = (state: DeliveryState, status: DeliveryState['status'], command: string) => {
  if (state.status !== status)
    throw new DomainError('WRONG_STATUS', `${command} needs a ${status} delivery, not a ${state.status} one`);
};

/** A message read from its journal row: watched if claimed (looked at again later, unless abandoned). */
function decideLoad(command: Extract<DeliveryCommand, { type: 'Load' }>): DeliveryEvent[] {
  const { row, nowMs, recheckMs, expiresAtMs } = command;
  const watched = row.status === 'sending';
  const notBeforeMs = watched && !row.claimAbandoned ? nowMs + recheckMs : row.notBeforeMs;
  const deadlineMs = deadlineOf(command);
  const { seq, failures } = row;
  return [{ type: 'Loaded', deadlineMs, seq, failures, notBeforeMs, watched, ...expiryOf(expiresAtMs) }];
}

/** The deadline a message works to: the usual delivery deadline, or its expiry if that comes first. */
const deadlineOf = (c: { deadlineMs: number } & Expiry) => Math.min(c.deadlineMs, c.expiresAtMs ?? Infinity);
const expiryOf = (expiresAtMs: number | undefined): Expiry =>
  expiresAtMs === undefined ? {} : { expiresAtMs };

/** The rules of one message's delivery in this replica: what each fact of its turn leads to. Pure. */
export function decideDelivery(command: DeliveryCommand, state: DeliveryState): DeliveryEvent[] {
  switch (command.type) {
    case 'Arrive':
      return [{ type: 'Arrived', deadlineMs: deadlineOf(command), ...expiryOf(command.expiresAtMs) }];
    case 'Load':
      return decideLoad(command);
    case 'NoteCredentialsUnavailable':
      return [
        {
          type: 'CredentialsUnavailable',
          error: command.error,
          notBeforeMs: command.nowMs + backoffMs(2, command.policy, command.random),
        },
      ];
    case 'RecordClaim':
      return decideClaim(command, state);
    case 'NoteClaimUnanswered':
      return [{ type: 'ClaimUnanswered' }];
    case 'Expire':
      requireStatus(state, 'claimed', command.type);
      return [decidedEvent(pastDeadline(state), state.attempts, command.nowMs, false)];
    case 'RecordAnswer':
      requireStatus(state, 'claimed', command.type);
      return decideAnswer(command, state);
    case 'CheckOrphan':
      requireStatus(state, 'watched', command.type);
      return [decidedEvent(UNCONFIRMED_ORPHAN, 0, command.nowMs, true)];
    case 'RecordWrite':
      if (!state.due) throw new DomainError('NOTHING_DUE', 'no journal write is due for this delivery');
      return decideWrite(command, state.due);
    case 'Interrupt':
      return [{ type: 'Interrupted', notBeforeMs: command.nowMs + INTERRUPTED_RETRY_MS }];
  }
}

/** The state after one more event. Pure: the same fold serves a live turn and a test's given events. */
export function evolveDelivery(state: DeliveryState, event: DeliveryEvent): DeliveryState {
  switch (event.type) {
    case 'Arrived':
      return {
        ...unreadDelivery(),
        status: 'open',
        deadlineMs: event.deadlineMs,
        ...expiryOf(event.expiresAtMs),
      };
    case 'Loaded': {
      const { deadlineMs, seq, failures, notBeforeMs, watched, expiresAtMs } = event;
      const status = watched ? 'watched' : 'open';
      const loaded = { deadlineMs, seq, failures, notBeforeMs, parked: true, ...expiryOf(expiresAtMs) };
      return { ...unreadDelivery(), status, ...loaded };
    }
    case 'CredentialsUnavailable':
      return { ...state, lastError: event.error, notBeforeMs: event.notBeforeMs };
    case 'Claimed':
      return { ...state, status: 'claimed', attempts: event.attempts, claimUncertain: false };
    case 'ClaimUnanswered':
      return { ...state, claimUncertain: true };
    case 'ClaimLost':
      return { ...state, status: 'lost' };
    case 'AlreadyDecided':
    case 'OutcomeStored':
    case 'Dropped':
      return withoutDue({ ...state, status: 'done' });
    case 'Parked': {
      const { seq, failures, notBeforeMs } = event;
      return withoutDue({ ...state, status: 'open', parked: true, seq, failures, notBeforeMs });
    }
    case 'Watched':
      return withoutDue({ ...state, status: 'watched', notBeforeMs: event.notBeforeMs });
    case 'Decided': {
      const { decided, attempts, atMs, abandonedClaim } = event;
      return { ...state, due: { kind: 'store', decided, attempts, atMs, abandonedClaim } };
    }
    case 'RetryPlanned': {
      const failures = state.failures + (event.failed ? 1 : 0);
      const lastError = event.error ?? state.lastError;
      const due: Due = { kind: 'give-back', atMs: event.atMs, failed: event.failed };
      return { ...state, failures, ...(lastError !== undefined ? { lastError } : {}), due };
    }
    case 'GivenBack':
      return withoutDue({ ...state, status: 'open', parked: true, notBeforeMs: event.atMs });
    case 'Interrupted':
      return { ...state, notBeforeMs: event.notBeforeMs };
  }
}

function withoutDue(state: DeliveryState): DeliveryState {
  const { due: _done, ...rest } = state;
  return rest;
}

/** One message's delivery in this replica as a decider (@mds/eventsourcing). */
export const deliveryDecider: Decider<DeliveryCommand, DeliveryEvent, DeliveryState> = {
  initialState: unreadDelivery,
  decide: decideDelivery,
  evolve: evolveDelivery,
};

/** The state a message starts in here: read from the log (Arrive) or from its journal row (Load). */
export const startDelivery = (
  command: Extract<DeliveryCommand, { type: 'Arrive' | 'Load' }>,
): DeliveryState => handle(deliveryDecider, [], command).state;
