import {
  Messenger,
  newEvent,
  type ClientRequestEvent,
  type ChannelAttempt,
  type Complete,
  type FallbackRoute,
  type MessageEvent,
  type RequestMetadata,
} from '@mds/contracts';
import { randomUUID } from 'node:crypto';

/** Events of one message or request, as the gateway, the registry and the senders write them. */
export function streamOf(id = randomUUID(), companyId = 'company-1') {
  const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 12, 0, seconds));
  const message = (seconds: number, event: NonNullable<MessageEvent['event']>, eventId = randomUUID()) =>
    newEvent<MessageEvent>({
      eventId,
      occurredAt: at(seconds),
      companyId,
      streamId: id,
      producer: 'test',
      event,
    });
  const request = (
    seconds: number,
    event: NonNullable<ClientRequestEvent['event']>,
    eventId = randomUUID(),
  ) =>
    newEvent<ClientRequestEvent>({
      eventId,
      occurredAt: at(seconds),
      companyId,
      streamId: id,
      producer: 'test',
      event,
    });
  return {
    id,
    accepted: (
      seconds = 0,
      o: {
        botName?: string;
        messenger?: Messenger;
        requestMetadata?: RequestMetadata;
        fallback?: FallbackRoute;
      } = {},
    ): Complete<MessageEvent> =>
      message(seconds, {
        $case: 'messageAccepted',
        value: {
          phoneNumber: '79123456789',
          text: 'hello',
          messenger: o.messenger ?? Messenger.MESSENGER_TELEGRAM,
          botName: o.botName ?? '',
          buttons: [],
          apiKeyId: 'key-1',
          idempotencyKey: '',
          requestMetadata: o.requestMetadata,
          fallback: o.fallback,
        },
      }),
    sent: (seconds = 1, sentAtSeconds = seconds, fallback?: FallbackRoute): Complete<MessageEvent> =>
      message(seconds, {
        $case: 'messageSent',
        value: { botId: 'bot-1', providerMessageId: '42', sentAt: at(sentAtSeconds), attempts: 1, fallback },
      }),
    /** A channel of a message with a fallback could not reach the person (route: that channel's). */
    attemptFailed: (seconds: number, route: FallbackRoute, attempt: ChannelAttempt): Complete<MessageEvent> =>
      message(seconds, { $case: 'messageAttemptFailed', value: { route, attempt, acceptedAt: at(0) } }),
    failed: (seconds = 1, code = 'CLIENT_NOT_FOUND', fallback?: FallbackRoute): Complete<MessageEvent> =>
      message(seconds, {
        $case: 'messageDeliveryFailed',
        value: {
          errorCode: code,
          errorDescription: `because ${code}`,
          failedAt: at(seconds),
          attempts: 0,
          botId: '',
          fallback,
        },
      }),
    phoneChangeRequested: (seconds = 0): Complete<ClientRequestEvent> =>
      request(seconds, {
        $case: 'phoneChangeRequested',
        value: { oldPhone: '79123456789', newPhone: '79876543210', apiKeyId: 'key-1', idempotencyKey: '' },
      }),
    phoneChanged: (seconds = 1): Complete<ClientRequestEvent> =>
      request(seconds, {
        $case: 'phoneChanged',
        value: { oldPhone: '79123456789', newPhone: '79876543210', linksMoved: 2 },
      }),
    phoneChangeRejected: (seconds = 1): Complete<ClientRequestEvent> =>
      request(seconds, {
        $case: 'phoneChangeRejected',
        value: { errorCode: 'OLD_PHONE_NOT_FOUND', errorDescription: 'no such client' },
      }),
    checkRequested: (seconds = 0): Complete<ClientRequestEvent> =>
      request(seconds, {
        $case: 'clientCheckRequested',
        value: { phoneNumber: '79123456789', apiKeyId: 'key-1', idempotencyKey: '' },
      }),
    checked: (seconds = 1): Complete<ClientRequestEvent> =>
      request(seconds, {
        $case: 'clientChecked',
        value: {
          phoneNumber: '79123456789',
          exists: true,
          bots: [{ messenger: Messenger.MESSENGER_MAX, botName: 'shop', reachable: true }],
        },
      }),
  };
}
