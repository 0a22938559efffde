import {
  derivedEventId,
  LEGACY_WEBHOOK_ENDPOINT_ID,
  metadataEntries,
  type ClientRequestEvent,
  type Complete,
  type MessageEvent,
} from '@mds/contracts';
import {
  webhookBodyOf,
  type WebhookNotification,
  type WebhookNotificationType,
} from '@mds/contracts/webhooks';

/** The kinds of notification a company's webhook receives (the `type` member of every body). */
export type NotificationKind = WebhookNotificationType;

/** One notification, ready to be stored and sent: the body's bytes never change across retries. */
export interface Notification {
  kind: NotificationKind;
  companyId: string;
  /** The public event_id the notification is about (a message, a change_phone or client/check request). */
  subjectId: string;
  sourceEventId: string;
  /** Typed by the schemas the public API document describes its `webhooks` with (@mds/contracts/webhooks). */
  body: WebhookNotification;
}

/**
 * The webhook-id of the notification of one outcome event to one endpoint: `msg_` and 32 hex digits, the same
 * every time. ep_default's is what it was before endpoints had ids, so rows stored then and now agree.
 */
export function webhookIdOf(sourceEventId: string, endpointId = LEGACY_WEBHOOK_ENDPOINT_ID): string {
  const purpose = endpointId === LEGACY_WEBHOOK_ENDPOINT_ID ? 'webhook' : `webhook/${endpointId}`;
  return `msg_${derivedEventId(sourceEventId, purpose).replaceAll('-', '')}`;
}

/** Whether a record is a request's own event (the one that may carry its metadata), not an outcome. */
export function isRequestEvent(record: Complete<MessageEvent> | Complete<ClientRequestEvent>): boolean {
  const kind = record.event.$case;
  return kind === 'messageAccepted' || kind === 'phoneChangeRequested' || kind === 'clientCheckRequested';
}

/**
 * The `metadata` a request event carried (MessageAccepted, PhoneChangeRequested, ClientCheckRequested, opened),
 * or undefined for other events and for requests without any: what the notifications of its outcome echo.
 */
export function requestMetadataOf(
  record: Complete<MessageEvent> | Complete<ClientRequestEvent>,
): Record<string, string> | undefined {
  const { event } = record;
  switch (event.$case) {
    case 'messageAccepted':
    case 'phoneChangeRequested':
    case 'clientCheckRequested':
      return metadataEntries(event.value.requestMetadata);
    default:
      return undefined;
  }
}

/**
 * The notification an outcome event calls for (its body as @mds/contracts/webhooks makes it), or undefined
 * for events nobody is told about (MessageAccepted, the *Requested events). `requestMetadata` is the
 * request's `metadata`, echoed in the body when given.
 */
export function notificationOf(
  record: Complete<MessageEvent> | Complete<ClientRequestEvent>,
  requestMetadata?: Record<string, string>,
): Notification | undefined {
  const body = webhookBodyOf(record, requestMetadata);
  if (!body) return undefined;
  const { metadata } = record;
  return {
    kind: body.type,
    companyId: metadata.companyId,
    subjectId: metadata.streamId,
    sourceEventId: metadata.eventId,
    body,
  };
}
