import {
  derivedEventId,
  LEGACY_WEBHOOK_ENDPOINT_ID,
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

/**
 * The notification an outcome event calls for (its body as @mds/contracts/webhooks makes it), or undefined
 * for events nobody is told about (MessageAccepted, the *Requested events).
 */
export function notificationOf(
  record: Complete<MessageEvent> | Complete<ClientRequestEvent>,
): Notification | undefined {
  const body = webhookBodyOf(record);
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
