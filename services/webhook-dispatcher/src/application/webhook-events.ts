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
import type { AttemptMade } from '../domain/delivery.js';
import type { ClaimedDelivery } from './ports.js';

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

/**
 * The events of one attempt made (`url` as logged, without its query): WebhookAttempted, then WebhookDelivered
 * or WebhookDeliveryAbandoned if it ended the delivery.
 */
export function attemptEvents(claim: ClaimedDelivery, made: AttemptMade, url: string): OutgoingEvent[] {
  const { attempt, decision, answer } = made;
  const record = (purpose: string, event: NonNullable<WebhookEvent['event']>): OutgoingEvent => ({
    topic: topics.webhook,
    key: claim.webhookId,
    record: newEvent<WebhookEvent>({
      eventId: attemptEventId(claim, purpose, attempt),
      occurredAt: made.at,
      companyId: claim.companyId,
      streamId: claim.webhookId,
      correlationId: claim.subjectId,
      causationId: claim.sourceEventId,
      producer: PRODUCER,
      event,
    }),
  });
  const about = { kind: claim.kind, subjectId: claim.subjectId, endpointId: claim.endpointId };
  const error = decision.outcome === 'succeeded' ? '' : cleanText(decision.reason, EVENT_ERROR_CHARS);
  const attempted = record('webhook-attempted', {
    $case: 'webhookAttempted',
    value: {
      ...about,
      attempt,
      url,
      statusCode: answer.result.kind === 'response' ? answer.result.status : 0,
      latencyMs: answer.latencyMs,
      outcome: OUTCOME[decision.outcome],
      error,
      // The answer may echo personal data: it stays in the attempt log, which forget reaches (webhook.proto).
      responseExcerpt: '',
      nextAttemptAt: decision.outcome === 'retryable' ? decision.nextAttemptAt : undefined,
    },
  });
  if (decision.outcome === 'retryable') return [attempted];
  const ended =
    decision.outcome === 'succeeded'
      ? record('webhook-delivered', { $case: 'webhookDelivered', value: { ...about, attempts: attempt } })
      : record('webhook-abandoned', {
          $case: 'webhookDeliveryAbandoned',
          value: { ...about, attempts: attempt, lastError: error },
        });
  return [attempted, ended];
}
