/**
 * One attempt of one webhook delivery as a decider (@mds/eventsourcing): whether to send it at all, what follows
 * the endpoint's answer (success, a retry at a later time, giving up, the endpoint gone), and a deferral when
 * nobody can say where to send it. Pure: time, randomness and the endpoint arrive in commands; the shell does
 * the reading, signing and POSTing the events ask for.
 *
 * The fold starts from the row a replica holds the lease of (`DeliveryClaimed`): a lease is worth one attempt
 * (or one deferral), after which the row goes back to the store with the state's schedule.
 */
import { DomainError, type Decider } from '@mds/eventsourcing';
import {
  decideAfterAttempt,
  describeResult,
  type AttemptDecision,
  type AttemptResult,
  type RetryPolicy,
} from './schedule.js';

/** The endpoint a delivery goes to, as the registry had it when the attempt began. */
export interface EndpointAtAttempt {
  url: string;
  enabled: boolean;
  /** Its signing secrets, current and rotated-out (those past `expiresAt` no longer sign). */
  secrets: readonly { secret: string; expiresAt?: Date }[];
}

/** What one POST came to (the sender's words about it; the excerpt arrives cleaned). */
export interface Answer {
  result: AttemptResult;
  latencyMs: number;
  responseExcerpt: string;
}

export type DeliveryCommand =
  /** Begin the attempt the lease is for; `endpoint` undefined: the company has no such endpoint (removed). */
  | { type: 'StartAttempt'; at: Date; endpoint: EndpointAtAttempt | undefined }
  /** The endpoint answered (or did not) the POST the attempt started. */
  | { type: 'RecordAnswer'; at: Date; answer: Answer; random: number; policy: RetryPolicy }
  /** Nobody could say where to send it (the registry is away): try again at `until`, no attempt counted. */
  | { type: 'Defer'; at: Date; until: Date; reason: string };

/** The attempt that was made: its number, when, where to, the answer and what follows it. */
export interface AttemptMade {
  attempt: number;
  startedAt: Date;
  at: Date;
  /** The endpoint's URL ('' once removed). */
  url: string;
  answer: Answer;
  decision: AttemptDecision;
}

export type DeliveryEvent =
  /** The row as it stood when this replica took its lease: where the fold starts. */
  | { type: 'DeliveryClaimed'; attempts: number; manual: boolean }
  /** The POST to make now, signed with `secrets`. */
  | { type: 'AttemptStarted'; attempt: number; at: Date; url: string; secrets: string[] }
  | ({ type: 'AttemptRecorded' } & AttemptMade)
  | { type: 'AttemptDeferred'; at: Date; until: Date; reason: string };

/**
 * A delivery under one lease. `step`: not claimed yet, claimed (an attempt may start), sending (the POST is
 * out), settled (the attempt is recorded or deferred: the row goes back). The rest is the row's schedule;
 * `lastStatusCode` and `lastError` are null until this lease's attempt sets them (the row keeps its own).
 */
export interface DeliveryState {
  step: 'unclaimed' | 'claimed' | 'sending' | 'settled';
  status: 'pending' | 'delivered' | 'failed';
  /** Attempts made, this lease's included. */
  attempts: number;
  /** The next attempt is a manual one (resend, recover): never rescheduled. */
  manual: boolean;
  nextAttemptAt: Date | null;
  finishedAt: Date | null;
  lastStatusCode: number | null;
  lastError: string | null;
  /** The attempt under way (step sending). */
  sending?: { attempt: number; at: Date; url: string };
  /** This lease's attempt, once recorded. */
  made?: AttemptMade;
}

/** Why nothing can be sent to the endpoint at `at`, if so. */
export function unsendable(endpoint: EndpointAtAttempt | undefined, at: Date): string | undefined {
  if (!endpoint) return 'the webhook endpoint was removed';
  if (!endpoint.enabled) return 'the webhook endpoint is disabled';
  if (signingSecrets(endpoint, at).length === 0) return 'the webhook endpoint has no signing secret';
  return undefined;
}

/** The secrets that sign at `at`: the current one and rotated-out ones not yet expired. */
export function signingSecrets(endpoint: EndpointAtAttempt, at: Date): string[] {
  return endpoint.secrets.filter((s) => !s.expiresAt || s.expiresAt > at).map((s) => s.secret);
}

/** Whether the attempt reached the endpoint, so its outcome moves the endpoint's failure clock. */
export function reachedEndpoint(result: AttemptResult): boolean {
  return result.kind === 'response' || result.kind === 'timeout' || result.kind === 'network';
}

function decideStart(
  command: Extract<DeliveryCommand, { type: 'StartAttempt' }>,
  state: DeliveryState,
): DeliveryEvent[] {
  const attempt = state.attempts + 1;
  const { at, endpoint } = command;
  const url = endpoint?.url ?? '';
  const refusal = unsendable(endpoint, at);
  if (refusal === undefined)
    return [{ type: 'AttemptStarted', attempt, at, url, secrets: signingSecrets(endpoint!, at) }];
  // Nothing is sent: the attempt is made and given up at once (a disabled endpoint's deliveries fail
  // unsent, so a recover after re-enabling reaches them).
  const result: AttemptResult = { kind: 'no_endpoint', error: refusal };
  const answer: Answer = { result, latencyMs: 0, responseExcerpt: '' };
  const decision: AttemptDecision = { outcome: 'gave_up', reason: describeResult(result) };
  return [{ type: 'AttemptRecorded', attempt, startedAt: at, at, url, answer, decision }];
}

function decideAnswer(
  command: Extract<DeliveryCommand, { type: 'RecordAnswer' }>,
  state: DeliveryState,
): DeliveryEvent[] {
  const sending = state.sending;
  if (state.step !== 'sending' || !sending)
    throw new DomainError('NO_ATTEMPT_STARTED', 'an answer came for no attempt under way');
  const decision = decideAfterAttempt({
    attempt: sending.attempt,
    manual: state.manual,
    result: command.answer.result,
    now: command.at,
    random: command.random,
    policy: command.policy,
  });
  return [
    {
      type: 'AttemptRecorded',
      attempt: sending.attempt,
      startedAt: sending.at,
      at: command.at,
      url: sending.url,
      answer: command.answer,
      decision,
    },
  ];
}

function decide(command: DeliveryCommand, state: DeliveryState): DeliveryEvent[] {
  if (command.type === 'RecordAnswer') return decideAnswer(command, state);
  if (state.step === 'unclaimed')
    throw new DomainError('NOT_CLAIMED', 'an attempt needs the lease of its delivery');
  if (state.step !== 'claimed')
    throw new DomainError('LEASE_USED', 'a lease is worth one attempt: this one was started or deferred');
  if (command.type === 'Defer')
    return [{ type: 'AttemptDeferred', at: command.at, until: command.until, reason: command.reason }];
  return decideStart(command, state);
}

/** The row's schedule after a recorded attempt. */
function recorded(state: DeliveryState, made: AttemptMade): DeliveryState {
  const { decision, answer } = made;
  const nextAttemptAt = decision.outcome === 'retryable' ? decision.nextAttemptAt : null;
  const { sending: _, ...rest } = state;
  return {
    ...rest,
    step: 'settled',
    status:
      decision.outcome === 'succeeded'
        ? 'delivered'
        : decision.outcome === 'retryable'
          ? 'pending'
          : 'failed',
    attempts: made.attempt,
    manual: false,
    nextAttemptAt,
    finishedAt: nextAttemptAt ? null : made.at,
    lastStatusCode: answer.result.kind === 'response' ? answer.result.status : 0,
    lastError: decision.outcome === 'succeeded' ? describeResult(answer.result) : decision.reason,
    made,
  };
}

function evolve(state: DeliveryState, event: DeliveryEvent): DeliveryState {
  switch (event.type) {
    case 'DeliveryClaimed':
      return { ...state, step: 'claimed', attempts: event.attempts, manual: event.manual };
    case 'AttemptStarted':
      return { ...state, step: 'sending', sending: { attempt: event.attempt, at: event.at, url: event.url } };
    case 'AttemptRecorded': {
      const { type: _, ...made } = event;
      return recorded(state, made);
    }
    case 'AttemptDeferred':
      // Still pending, the manual flag kept: a deferral is no attempt.
      return { ...state, step: 'settled', status: 'pending', nextAttemptAt: event.until, finishedAt: null };
  }
}

export const delivery: Decider<DeliveryCommand, DeliveryEvent, DeliveryState> = {
  initialState: () => ({
    step: 'unclaimed',
    status: 'pending',
    attempts: 0,
    manual: false,
    nextAttemptAt: null,
    finishedAt: null,
    lastStatusCode: null,
    lastError: null,
  }),
  decide,
  evolve,
};
