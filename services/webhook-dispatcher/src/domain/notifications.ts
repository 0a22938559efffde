import { derivedEventId, type ClientRequestEvent, type Complete, type MessageEvent } from '@mds/contracts';
import type { WebhookNotification, WebhookNotificationType } from '@mds/contracts/webhooks';

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

/** The webhook-id of the notification of one outcome event: `msg_` and 32 hex digits, the same every time. */
export function webhookIdOf(sourceEventId: string): string {
  return `msg_${derivedEventId(sourceEventId, 'webhook').replaceAll('-', '')}`;
}

const SERVICE: Record<number, 'telegram' | 'max'> = { 1: 'telegram', 2: 'max' };

/** ISO 8601 in UTC with milliseconds, e.g. "2026-11-21T13:25:28.123Z". */
const iso = (at: Date | undefined, fallback: Date | undefined) =>
  (at ?? fallback ?? new Date(0)).toISOString();

/**
 * The notification an outcome event calls for, or undefined for events nobody is told about (MessageAccepted,
 * the *Requested events). Every body starts with `type`, then `event_id` and `timestamp`; `message.status`
 * carries exactly the spec's fields (section 2.4) beside `type`.
 */
export function notificationOf(
  record: Complete<MessageEvent> | Complete<ClientRequestEvent>,
): Notification | undefined {
  const { metadata, event } = record;
  const base = {
    companyId: metadata.companyId,
    subjectId: metadata.streamId,
    sourceEventId: metadata.eventId,
  };
  const head = <K extends NotificationKind>(kind: K, at: Date | undefined) => ({
    type: kind,
    event_id: metadata.streamId,
    timestamp: iso(at, metadata.occurredAt),
  });
  switch (event.$case) {
    case 'messageSent':
      return {
        ...base,
        kind: 'message.status',
        body: { ...head('message.status', event.value.sentAt), state: 'sent' },
      };
    case 'messageDeliveryFailed':
      return {
        ...base,
        kind: 'message.status',
        body: {
          ...head('message.status', event.value.failedAt),
          state: 'failed',
          error_code: event.value.errorCode,
          error_description: event.value.errorDescription,
        },
      };
    case 'clientChecked':
      return {
        ...base,
        kind: 'client.check',
        body: {
          ...head('client.check', undefined),
          phone_number: event.value.phoneNumber,
          exists: event.value.exists,
          bots: event.value.bots.map((b) => ({
            service: SERVICE[b.messenger] ?? 'unknown',
            bot_name: b.botName,
            reachable: b.reachable,
          })),
        },
      };
    case 'phoneChanged':
      return {
        ...base,
        kind: 'client.phone_changed',
        body: {
          ...head('client.phone_changed', undefined),
          state: 'changed',
          old_phone: event.value.oldPhone,
          new_phone: event.value.newPhone,
          links_moved: event.value.linksMoved,
        },
      };
    case 'phoneChangeRejected':
      return {
        ...base,
        kind: 'client.phone_changed',
        body: {
          ...head('client.phone_changed', undefined),
          state: 'failed',
          error_code: event.value.errorCode,
          error_description: event.value.errorDescription,
        },
      };
    default:
      return undefined;
  }
}
