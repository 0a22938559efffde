import {
  derivedEventId,
  messengerCode,
  newEvent,
  metadataField,
  topics,
  type Channel,
  type ClientRequestEvent,
  type FallbackRoute,
  type MessageEvent,
  type MessengerName,
} from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';

export const PRODUCER = 'gateway';

export interface Acceptance {
  /** The public event_id: the id of the message or request. */
  requestId: string;
  companyId: string;
  apiKeyId: string;
  idempotencyKey: string;
  at: Date;
}

// The envelope's own id derives from the request id, so a retried publish (same Idempotency-Key) writes an
// event that consumers recognise as the same one.
function envelope(a: Acceptance) {
  return {
    eventId: derivedEventId(a.requestId, 'accepted'),
    occurredAt: a.at,
    companyId: a.companyId,
    streamId: a.requestId,
    correlationId: a.requestId,
    producer: PRODUCER,
  };
}

type ChannelBody = { service: MessengerName; bot_name?: string | undefined };

const channelOf = (c: ChannelBody): Channel => ({
  messenger: messengerCode(c.service),
  botName: c.bot_name ?? '',
});

/** send's `fallback` as the event carries it: at the message's own channel, none tried. None: no field. */
function fallbackOf(body: ChannelBody & { fallback?: ChannelBody[] | undefined }): {
  fallback?: FallbackRoute;
} {
  if (!body.fallback?.length) return {};
  return {
    fallback: { channel: 0, current: channelOf(body), next: body.fallback.map(channelOf), tried: [] },
  };
}

/** send_at as the event carries it: a time in the past means now (no send_at). */
function sendAtOf(at: Date, sendAt: string | undefined): { sendAt?: Date } {
  const ms = sendAt === undefined ? Number.NaN : Date.parse(sendAt);
  return ms > at.getTime() ? { sendAt: new Date(ms) } : {};
}

export function messageAccepted(
  a: Acceptance,
  body: {
    phone_number: string;
    text: string;
    service: MessengerName;
    bot_name?: string | undefined;
    buttons?: { text: string; url: string }[] | undefined;
    ttl_seconds?: number | undefined;
    metadata?: Record<string, string> | undefined;
    send_at?: string | undefined;
    fallback?: ChannelBody[] | undefined;
  },
): OutgoingEvent {
  return {
    topic: topics.message,
    key: a.requestId,
    record: newEvent<MessageEvent>({
      ...envelope(a),
      event: {
        $case: 'messageAccepted',
        value: {
          phoneNumber: body.phone_number,
          text: body.text,
          messenger: messengerCode(body.service),
          botName: body.bot_name ?? '',
          buttons: body.buttons ?? [],
          apiKeyId: a.apiKeyId,
          idempotencyKey: a.idempotencyKey,
          ...(body.ttl_seconds === undefined
            ? {}
            : { expiresAt: new Date(a.at.getTime() + body.ttl_seconds * 1000) }),
          requestMetadata: metadataField(body.metadata),
          ...sendAtOf(a.at, body.send_at),
          ...fallbackOf(body),
        },
      },
    }),
  };
}

/**
 * A cancel of a message not yet ended (POST /api/v1/cancel), ordered after its acceptance (same key). A message
 * with a fallback names the channel it was at (`fallback`, from the read model), whose messenger's sender decides
 * it: `messenger` is then that channel's.
 */
export function messageCancelRequested(
  a: Omit<Acceptance, 'idempotencyKey'> & { eventId: string },
  messenger: MessengerName,
  fallback?: FallbackRoute,
): OutgoingEvent {
  return {
    topic: topics.message,
    key: a.requestId,
    record: newEvent<MessageEvent>({
      eventId: a.eventId,
      occurredAt: a.at,
      companyId: a.companyId,
      streamId: a.requestId,
      correlationId: a.requestId,
      producer: PRODUCER,
      event: {
        $case: 'messageCancelRequested',
        value: fallback?.current
          ? { messenger: fallback.current.messenger, apiKeyId: a.apiKeyId, fallback }
          : { messenger: messengerCode(messenger), apiKeyId: a.apiKeyId },
      },
    }),
  };
}

export function phoneChangeRequested(
  a: Acceptance,
  body: { old_phone: string; new_phone: string; metadata?: Record<string, string> | undefined },
): OutgoingEvent {
  return {
    topic: topics.clientRequest,
    key: a.requestId,
    record: newEvent<ClientRequestEvent>({
      ...envelope(a),
      event: {
        $case: 'phoneChangeRequested',
        value: {
          oldPhone: body.old_phone,
          newPhone: body.new_phone,
          apiKeyId: a.apiKeyId,
          idempotencyKey: a.idempotencyKey,
          requestMetadata: metadataField(body.metadata),
        },
      },
    }),
  };
}

export function clientCheckRequested(
  a: Acceptance,
  body: { phone_number: string; metadata?: Record<string, string> | undefined },
): OutgoingEvent {
  return {
    topic: topics.clientRequest,
    key: a.requestId,
    record: newEvent<ClientRequestEvent>({
      ...envelope(a),
      event: {
        $case: 'clientCheckRequested',
        value: {
          phoneNumber: body.phone_number,
          apiKeyId: a.apiKeyId,
          idempotencyKey: a.idempotencyKey,
          requestMetadata: metadataField(body.metadata),
        },
      },
    }),
  };
}
