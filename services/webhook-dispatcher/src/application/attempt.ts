import {
  AttemptOutcome,
  cleanText,
  derivedEventId,
  LEGACY_WEBHOOK_ENDPOINT_ID,
  newEvent,
  topics,
  type WebhookEvent,
} from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';
import { redactedUrl, type Logger } from '@mds/logging';
import { RegistryError } from '@mds/registry-client';
import { inHop, SpanKind } from '@mds/telemetry';
import {
  deliverySchedule,
  describeResult,
  type DeliverySchedule,
  type AttemptDecision,
  type RetryPolicy,
} from '../domain/schedule.js';
import type { Pacer } from './pacing.js';
import {
  endpointKey,
  type ClaimedDelivery,
  type Completion,
  type Endpoint,
  type EndpointDirectory,
  type SentAttempt,
  type WebhookSender,
} from './ports.js';
import { webhookHeaders } from './signing.js';

export const PRODUCER = 'webhook-dispatcher';

const OUTCOME = {
  succeeded: AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED,
  retryable: AttemptOutcome.ATTEMPT_OUTCOME_RETRYABLE,
  gone: AttemptOutcome.ATTEMPT_OUTCOME_GONE,
  gave_up: AttemptOutcome.ATTEMPT_OUTCOME_GAVE_UP,
} as const;

/** Why an attempt failed, as an event says it: our words around the endpoint's (each cleaned already). */
const EVENT_ERROR_CHARS = 1_000;

/** The id of an attempt's event: ep_default's as before endpoints had ids (a replay after the upgrade agrees). */
function attemptEventId(claim: ClaimedDelivery, purpose: string, attempt: number): string {
  const endpoint = claim.endpointId === LEGACY_WEBHOOK_ENDPOINT_ID ? '' : `${claim.endpointId}/`;
  return derivedEventId(claim.sourceEventId, `${purpose}/${endpoint}${attempt}`);
}

/** The events of one attempt: WebhookAttempted, then WebhookDelivered or WebhookDeliveryAbandoned if it ended. */
function attemptEvents(
  claim: ClaimedDelivery,
  attempt: number,
  url: string,
  sent: SentAttempt,
  decision: AttemptDecision,
  at: Date,
): OutgoingEvent[] {
  const record = (purpose: string, event: NonNullable<WebhookEvent['event']>): OutgoingEvent => ({
    topic: topics.webhook,
    key: claim.webhookId,
    record: newEvent<WebhookEvent>({
      eventId: attemptEventId(claim, purpose, attempt),
      occurredAt: at,
      companyId: claim.companyId,
      streamId: claim.webhookId,
      correlationId: claim.subjectId,
      causationId: claim.sourceEventId,
      producer: PRODUCER,
      event,
    }),
  });
  const error = decision.outcome === 'succeeded' ? '' : cleanText(decision.reason, EVENT_ERROR_CHARS);
  const out = [
    record('webhook-attempted', {
      $case: 'webhookAttempted',
      value: {
        kind: claim.kind,
        subjectId: claim.subjectId,
        endpointId: claim.endpointId,
        attempt,
        url,
        statusCode: sent.result.kind === 'response' ? sent.result.status : 0,
        latencyMs: sent.latencyMs,
        outcome: OUTCOME[decision.outcome],
        error,
        // The answer may echo personal data: it stays in the attempt log, which forget reaches (webhook.proto).
        responseExcerpt: '',
        nextAttemptAt: decision.outcome === 'retryable' ? decision.nextAttemptAt : undefined,
      },
    }),
  ];
  if (decision.outcome === 'succeeded') {
    out.push(
      record('webhook-delivered', {
        $case: 'webhookDelivered',
        value: {
          kind: claim.kind,
          subjectId: claim.subjectId,
          endpointId: claim.endpointId,
          attempts: attempt,
        },
      }),
    );
  } else if (decision.outcome !== 'retryable') {
    out.push(
      record('webhook-abandoned', {
        $case: 'webhookDeliveryAbandoned',
        value: {
          kind: claim.kind,
          subjectId: claim.subjectId,
          endpointId: claim.endpointId,
          attempts: attempt,
          lastError: error,
        },
      }),
    );
  }
  return out;
}

export interface AttemptOptions {
  directory: EndpointDirectory;
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
  onAttempt?: (decision: AttemptDecision, sent: SentAttempt) => void;
}

/** A deferral without an attempt: the registry could not say where to deliver. */
function deferred(claim: ClaimedDelivery, at: Date): Completion {
  return {
    claim,
    update: {
      status: 'pending',
      attempts: claim.attempts,
      nextAttemptAt: at,
      lastStatusCode: null,
      lastError: null,
      finishedAt: null,
    },
    events: [],
  };
}

/** Why nothing can be sent to the delivery's endpoint now, if so. */
function unsendable(endpoint: Endpoint | undefined, secrets: string[]): string | undefined {
  if (!endpoint) return 'the webhook endpoint was removed';
  if (!endpoint.enabled) return 'the webhook endpoint is disabled';
  if (secrets.length === 0) return 'the webhook endpoint has no signing secret';
  return undefined;
}

/** The POST of one attempt to its endpoint (after its turn under the endpoint's rate limit), or why none was made. */
async function sendOnce(o: AttemptOptions, claim: ClaimedDelivery, startedAt: Date) {
  const endpoints = await o.directory.endpoints(claim.companyId);
  const endpoint = endpoints.find((e) => e.endpointId === claim.endpointId);
  const secrets = (endpoint?.secrets ?? [])
    .filter((s) => !s.expiresAt || s.expiresAt > startedAt)
    .map((s) => s.secret);
  const error = unsendable(endpoint, secrets);
  // The endpoint's query may carry the receiver's token: attempts, events and logs keep the URL without it.
  const url = endpoint ? redactedUrl(endpoint.url) : '';
  if (!endpoint || error) {
    const sent: SentAttempt = {
      result: { kind: 'no_endpoint', error: error! },
      latencyMs: 0,
      responseExcerpt: cleanText('', 0),
    };
    return { url, sent };
  }
  await o.pacer.turn(endpointKey(claim), endpoint.rateLimitPerSecond);
  const headers = webhookHeaders({
    webhookId: claim.webhookId,
    // The attempt's wall-clock time: receivers check it against theirs (±5 min).
    timestampSeconds: Math.floor(Date.now() / 1000),
    body: claim.body,
    secrets,
  });
  return { url, sent: await o.sender.send(endpoint.url, headers, claim.body, startedAt) };
}

/**
 * One attempt as one hop of the trace of the event the notification came from (its context kept in the
 * delivery's row): the POST is its child, and the attempt's events carry it.
 */
export function attemptDelivery(o: AttemptOptions, claim: ClaimedDelivery): Promise<Completion> {
  const origin = {
    traceparent: claim.traceparent,
    tracestate: claim.tracestate,
    eventId: claim.sourceEventId,
    correlationId: claim.subjectId,
  };
  return inHop('webhook deliver', origin, () => attemptOnce(o, claim), {
    kind: SpanKind.CONSUMER,
    attributes: {
      'mds.webhook_id': claim.webhookId,
      'mds.webhook_kind': claim.kind,
      'mds.webhook_endpoint_id': claim.endpointId,
      'mds.attempt': claim.attempts + 1,
    },
  });
}

/** One attempt of a leased delivery: POST it signed, decide what follows, describe the result to store. */
async function attemptOnce(o: AttemptOptions, claim: ClaimedDelivery): Promise<Completion> {
  const attempt = claim.attempts + 1;
  const startedAt = o.now();
  let url: string;
  let sent: SentAttempt;
  try {
    ({ url, sent } = await sendOnce(o, claim, startedAt));
  } catch (error) {
    if (!(error instanceof RegistryError)) throw error;
    o.logger.warn({ err: error, webhookId: claim.webhookId }, 'registry unavailable; delivery deferred');
    return deferred(claim, new Date(o.now().getTime() + o.registryRetryMs));
  }
  const at = o.now();
  const before: DeliverySchedule = { ...deliverySchedule.initialState(), attempts: claim.attempts };
  const [attempted] = deliverySchedule.decide(
    {
      type: 'RecordAttempt',
      manual: claim.manual,
      result: sent.result,
      now: at,
      random: o.random(),
      policy: o.policy,
    },
    before,
  );
  const { decision } = attempted!;
  const after = deliverySchedule.evolve(before, attempted!);
  o.onAttempt?.(decision, sent);
  const statusCode = sent.result.kind === 'response' ? sent.result.status : 0;
  const error = decision.outcome === 'succeeded' ? null : decision.reason;
  const reached =
    sent.result.kind === 'response' || sent.result.kind === 'timeout' || sent.result.kind === 'network';
  const retryAt = after.nextAttemptAt;
  return {
    claim,
    update: {
      status: after.status,
      attempts: after.attempts,
      nextAttemptAt: retryAt,
      lastStatusCode: statusCode,
      lastError: error ?? describeResult(sent.result),
      finishedAt: after.finishedAt,
    },
    attempt: {
      attempt,
      trigger: claim.manual ? 'manual' : 'scheduled',
      url,
      statusCode,
      latencyMs: sent.latencyMs,
      outcome: decision.outcome,
      error,
      responseExcerpt: sent.responseExcerpt,
      nextAttemptAt: retryAt,
      attemptedAt: startedAt,
    },
    events: attemptEvents(claim, attempt, url, sent, decision, at),
    ...(reached ? { health: { succeeded: decision.outcome === 'succeeded', at } } : {}),
  };
}
