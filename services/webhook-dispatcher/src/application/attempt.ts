import {
  AttemptOutcome,
  cleanText,
  derivedEventId,
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
import type { ClaimedDelivery, Completion, EndpointDirectory, SentAttempt, WebhookSender } from './ports.js';
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
      eventId: derivedEventId(claim.sourceEventId, `${purpose}/${attempt}`),
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
        value: { kind: claim.kind, subjectId: claim.subjectId, attempts: attempt },
      }),
    );
  } else if (decision.outcome !== 'retryable') {
    out.push(
      record('webhook-abandoned', {
        $case: 'webhookDeliveryAbandoned',
        value: { kind: claim.kind, subjectId: claim.subjectId, attempts: attempt, lastError: error },
      }),
    );
  }
  return out;
}

export interface AttemptOptions {
  directory: EndpointDirectory;
  sender: WebhookSender;
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

/** What an endpoint lookup says of where to deliver, or why nothing can be sent. */
async function sendOnce(o: AttemptOptions, claim: ClaimedDelivery, startedAt: Date) {
  const endpoint = await o.directory.endpoint(claim.companyId);
  const secrets = (endpoint?.secrets ?? [])
    .filter((s) => !s.expiresAt || s.expiresAt > startedAt)
    .map((s) => s.secret);
  if (!endpoint || !endpoint.enabled || secrets.length === 0) {
    const error = !endpoint
      ? 'the company has no webhook endpoint'
      : !endpoint.enabled
        ? 'the webhook endpoint is disabled'
        : 'the webhook endpoint has no signing secret';
    const sent: SentAttempt = {
      result: { kind: 'no_endpoint', error },
      latencyMs: 0,
      responseExcerpt: cleanText('', 0),
    };
    return { url: endpoint ? redactedUrl(endpoint.url) : '', sent };
  }
  const headers = webhookHeaders({
    webhookId: claim.webhookId,
    // The attempt's wall-clock time: receivers check it against theirs (±5 min).
    timestampSeconds: Math.floor(Date.now() / 1000),
    body: claim.body,
    secrets,
  });
  // The endpoint's query may carry the receiver's token: attempts, events and logs keep the URL without it.
  return {
    url: redactedUrl(endpoint.url),
    sent: await o.sender.send(endpoint.url, headers, claim.body, startedAt),
  };
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
