import { fold, stateOf } from '@mds/eventsourcing';
import { redactedUrl, type Logger } from '@mds/logging';
import { RegistryError } from '@mds/registry-client';
import { inHop, SpanKind } from '@mds/telemetry';
import {
  delivery,
  reachedEndpoint,
  type AttemptMade,
  type DeliveryCommand,
  type DeliveryEvent,
  type DeliveryState,
} from '../domain/delivery.js';
import type { RetryPolicy } from '../domain/schedule.js';
import type { Pacer } from './pacing.js';
import {
  endpointKey,
  type ClaimedDelivery,
  type Completion,
  type Endpoint,
  type EndpointDirectory,
  type WebhookSender,
} from './ports.js';
import { webhookHeaders } from './signing.js';
import { attemptEvents } from './webhook-events.js';

export { PRODUCER } from './webhook-events.js';

/** What an attempt needs from outside: where endpoints are, how to POST, the clock and the policy. */
export interface AttemptPorts {
  directory: Pick<EndpointDirectory, 'endpoints'>;
  sender: WebhookSender;
  /** Endpoints' own rate limits. */
  pacer: Pacer;
  logger: Logger;
  /** The schedule's clock (injectable: tests move it forward). */
  now: () => Date;
  random: () => number;
  policy: RetryPolicy;
  /** How long to wait before asking again when the registry cannot say where to deliver. */
  registryRetryMs: number;
  /** Called with each attempt made (not with a deferral). */
  onAttempt?: (made: AttemptMade) => void;
}

/** The delivery's endpoint as the directory has it; 'unavailable' when the registry cannot be asked. */
async function endpointOf(
  o: AttemptPorts,
  claim: ClaimedDelivery,
): Promise<Endpoint | undefined | 'unavailable'> {
  try {
    return (await o.directory.endpoints(claim.companyId)).find((e) => e.endpointId === claim.endpointId);
  } catch (error) {
    if (!(error instanceof RegistryError)) throw error;
    o.logger.warn({ err: error, webhookId: claim.webhookId }, 'registry unavailable; delivery deferred');
    return 'unavailable';
  }
}

/** The POST an attempt started, after its turn under the endpoint's rate limit. */
async function post(
  o: AttemptPorts,
  claim: ClaimedDelivery,
  endpoint: Endpoint,
  started: Extract<DeliveryEvent, { type: 'AttemptStarted' }>,
) {
  await o.pacer.turn(endpointKey(claim), endpoint.rateLimitPerSecond);
  const headers = webhookHeaders({
    webhookId: claim.webhookId,
    // The attempt's wall-clock time: receivers check it against theirs (±5 min).
    timestampSeconds: Math.floor(Date.now() / 1000),
    body: claim.body,
    secrets: started.secrets,
  });
  return o.sender.send(endpoint.url, headers, claim.body, started.at);
}

/** The row's new state, its attempt log entry, its events and what it says of the endpoint's health. */
export function completionOf(claim: ClaimedDelivery, state: DeliveryState): Completion {
  const { made } = state;
  const update = {
    status: state.status,
    attempts: state.attempts,
    nextAttemptAt: state.nextAttemptAt,
    lastStatusCode: state.lastStatusCode,
    lastError: state.lastError,
    finishedAt: state.finishedAt,
    manual: state.manual,
  };
  if (!made) return { claim, update, events: [] };
  // The endpoint's query may carry the receiver's token: attempts, events and logs keep the URL without it.
  const url = made.url ? redactedUrl(made.url) : '';
  const { answer, decision } = made;
  return {
    claim,
    update,
    attempt: {
      attempt: made.attempt,
      trigger: claim.manual ? 'manual' : 'scheduled',
      url,
      statusCode: state.lastStatusCode ?? 0,
      latencyMs: answer.latencyMs,
      outcome: decision.outcome,
      error: decision.outcome === 'succeeded' ? null : decision.reason,
      responseExcerpt: answer.responseExcerpt,
      nextAttemptAt: state.nextAttemptAt,
      attemptedAt: made.startedAt,
    },
    events: attemptEvents(claim, made, url),
    ...(reachedEndpoint(answer.result)
      ? { health: { succeeded: decision.outcome === 'succeeded', at: made.at } }
      : {}),
  };
}

/** The decider's state of a claimed delivery before its attempt. */
const claimedState = (claim: ClaimedDelivery): DeliveryState =>
  stateOf(delivery, [{ type: 'DeliveryClaimed', attempts: claim.attempts, manual: claim.manual }]);

/**
 * A claimed delivery this replica gives back unattempted (it stops): due at `at` again, for any replica.
 */
export function handedBack(claim: ClaimedDelivery, at: Date): Completion {
  const before = claimedState(claim);
  const events = delivery.decide({ type: 'Defer', at, until: at, reason: 'this replica stops' }, before);
  return completionOf(claim, fold(delivery.evolve, before, events));
}

/**
 * One attempt of a leased delivery: the decider says whether to POST and what follows the answer; this reads
 * the endpoint, waits its turn, signs and POSTs as its events ask.
 */
async function attemptOnce(o: AttemptPorts, claim: ClaimedDelivery): Promise<DeliveryState> {
  let state = claimedState(claim);
  const step = (command: DeliveryCommand) => {
    const events = delivery.decide(command, state);
    state = fold(delivery.evolve, state, events);
    return events;
  };
  const at = o.now();
  const endpoint = await endpointOf(o, claim);
  if (endpoint === 'unavailable') {
    const until = new Date(o.now().getTime() + o.registryRetryMs);
    step({ type: 'Defer', at, until, reason: 'the registry could not be asked' });
    return state;
  }
  const [started] = step({ type: 'StartAttempt', at, endpoint });
  if (started?.type !== 'AttemptStarted') return state;
  const answer = await post(o, claim, endpoint!, started);
  step({ type: 'RecordAnswer', at: o.now(), answer, random: o.random(), policy: o.policy });
  return state;
}

/**
 * One attempt as one hop of the trace of the event the notification came from (its context kept in the
 * delivery's row): the POST is its child, and the attempt's events carry it. Resolves with the result to store.
 */
export async function attemptDelivery(o: AttemptPorts, claim: ClaimedDelivery): Promise<Completion> {
  const origin = {
    traceparent: claim.traceparent,
    tracestate: claim.tracestate,
    eventId: claim.sourceEventId,
    correlationId: claim.subjectId,
  };
  const state = await inHop('webhook deliver', origin, () => attemptOnce(o, claim), {
    kind: SpanKind.CONSUMER,
    attributes: {
      'mds.webhook_id': claim.webhookId,
      'mds.webhook_kind': claim.kind,
      'mds.webhook_endpoint_id': claim.endpointId,
      'mds.attempt': claim.attempts + 1,
    },
  });
  if (state.made) o.onAttempt?.(state.made);
  return completionOf(claim, state);
}
