import {
  AttemptOutcome,
  endpointIdOf,
  metadataEntries,
  type RequestMetadata,
  type BotUpdateEvent,
  type ClientRequestEvent,
  type Complete,
  type Channel,
  type DeliveryEvent,
  type FallbackRoute,
  type MessageEvent,
  type WebhookEvent,
} from '@mds/contracts';
import { channelEcho, channelsOf } from '@mds/contracts/webhooks';
import { messengerName, type MessageRecord } from '@mds/message-state';

/** The events the dashboard's read models are built from. */
export type DashboardRecord =
  | Complete<MessageEvent>
  | Complete<DeliveryEvent>
  | Complete<WebhookEvent>
  | Complete<ClientRequestEvent>
  | Complete<BotUpdateEvent>;

export type WebhookAttemptOutcome = 'succeeded' | 'retryable' | 'gone' | 'gave_up' | 'unknown';

/** One event as the read models need it: a timeline entry, and what it changes. */
export interface ProjectedEvent {
  eventId: string;
  companyId: string;
  /** The public id of the message or request it belongs to (its timeline). */
  subjectId: string;
  /** Event type name, e.g. "MessageAccepted", "DeliveryRequested", "WebhookAttempted". */
  type: string;
  at: Date;
  producer: string;
  /** Whether it is an entry of its subject's timeline. */
  timeline: boolean;
  /** What the timeline shows of it: the event's own fields, snake_case, plain JSON. */
  data: Record<string, unknown>;
  change: Change;
}

export type Change =
  | {
      kind: 'accepted';
      /** The acceptance itself: @mds/message-state's rules fold it into the message's lifecycle. */
      record: MessageRecord;
      phone: string;
      /** As opened from the event ('' when sealed and not opened, or erased). */
      text: string;
      apiKeyId: string;
    }
  | { kind: 'routed'; botId: string; chatId: string }
  /** A send or a failure: @mds/message-state's rules decide whether it is the message's outcome. */
  | { kind: 'outcome'; record: MessageRecord }
  | {
      kind: 'webhook-attempt';
      webhookId: string;
      /** The endpoint tried (ep_default for events written before endpoints had ids). */
      endpointId: string;
      webhookKind: string;
      attempt: number;
      outcome: WebhookAttemptOutcome;
      statusCode: number;
      error: string;
      url: string;
      nextAttemptAt: Date | null;
    }
  | {
      kind: 'webhook-finished';
      webhookId: string;
      endpointId: string;
      webhookKind: string;
      delivered: boolean;
      attempts: number;
    }
  | { kind: 'request'; apiKeyId: string }
  | { kind: 'bot-update'; botId: string }
  | { kind: 'none' };

const OUTCOMES: Record<number, WebhookAttemptOutcome> = {
  [AttemptOutcome.ATTEMPT_OUTCOME_SUCCEEDED]: 'succeeded',
  [AttemptOutcome.ATTEMPT_OUTCOME_RETRYABLE]: 'retryable',
  [AttemptOutcome.ATTEMPT_OUTCOME_GONE]: 'gone',
  [AttemptOutcome.ATTEMPT_OUTCOME_GAVE_UP]: 'gave_up',
};

const iso = (d: Date | undefined) => (d ? d.toISOString() : null);
const buttonsOf = (buttons: { text: string; url: string }[]) =>
  buttons.map((b) => ({ text: b.text, url: b.url }));

/** A channel as the API names it (`service`, and `bot_name` unless the default bot). */
const channelOf = (c: Pick<Channel, 'messenger' | 'botName'> | undefined) =>
  channelEcho(c?.messenger ?? 0, c?.botName ?? '');

/**
 * An outcome's channel, for a message with a fallback: the one that decided it and those tried before it
 * (`attempts`), as the message.status webhook names them. Nothing for a message without one.
 */
const decidedBy = (route: FallbackRoute | undefined): { fallback?: Record<string, unknown> } =>
  route ? { fallback: { channel: route.channel, ...channelsOf(route) } } : {};

type RecordEvent = DashboardRecord['event'];
type EventOf<Case extends RecordEvent['$case']> = Extract<RecordEvent, { $case: Case }>;

/** What every projected event has in common, from its envelope. */
type Base = Omit<ProjectedEvent, 'data' | 'change'>;

/** A message's acceptance, its send or failure, and where it was routed. */
function messageProjection(
  event: EventOf<
    'messageAccepted' | 'messageSent' | 'messageDeliveryFailed' | 'messageAttemptFailed' | 'deliveryRequested'
  >,
  metadata: DashboardRecord['metadata'],
  base: Base,
): ProjectedEvent | undefined {
  const at = base.at;
  switch (event.$case) {
    case 'messageAccepted': {
      const e = event.value;
      const messenger = messengerName(e.messenger);
      return {
        ...base,
        data: {
          phone_number: e.phoneNumber,
          service: messenger,
          bot_name: e.botName || null,
          text: e.text,
          buttons: buttonsOf(e.buttons),
          api_key_id: e.apiKeyId,
          idempotency_key: e.idempotencyKey || null,
          ...(e.expiresAt ? { expires_at: e.expiresAt.toISOString() } : {}),
          ...metadataOf(e.requestMetadata),
          ...(e.sendAt ? { send_at: e.sendAt.toISOString() } : {}),
          ...(e.fallback ? { fallback: e.fallback.next.map(channelOf) } : {}),
        },
        change: {
          kind: 'accepted',
          record: { metadata, event },
          phone: e.phoneNumber,
          text: e.text,
          apiKeyId: e.apiKeyId,
        },
      };
    }
    case 'messageSent': {
      const e = event.value;
      const finishedAt = e.sentAt ?? at;
      return {
        ...base,
        data: {
          bot_id: e.botId,
          provider_message_id: e.providerMessageId,
          sent_at: finishedAt.toISOString(),
          attempts: e.attempts,
          ...decidedBy(e.fallback),
        },
        change: { kind: 'outcome', record: { metadata, event } },
      };
    }
    case 'messageDeliveryFailed': {
      const e = event.value;
      const finishedAt = e.failedAt ?? at;
      return {
        ...base,
        data: {
          error_code: e.errorCode,
          error_description: e.errorDescription,
          failed_at: finishedAt.toISOString(),
          attempts: e.attempts,
          bot_id: e.botId || null,
          ...decidedBy(e.fallback),
        },
        change: { kind: 'outcome', record: { metadata, event } },
      };
    }
    // A channel that could not reach the person, the next one tried: not an outcome (the message stays new).
    case 'messageAttemptFailed': {
      const { route, attempt } = event.value;
      return {
        ...base,
        data: {
          channel: route?.channel ?? 0,
          ...channelOf(attempt),
          bot_id: attempt?.botId || null,
          error_code: attempt?.errorCode ?? null,
          error_description: attempt?.errorDescription || null,
          failed_at: iso(attempt?.failedAt ?? at),
          next: route?.next[0] ? channelOf(route.next[0]) : null,
        },
        change: { kind: 'none' },
      };
    }
    case 'deliveryRequested': {
      const e = event.value;
      return {
        ...base,
        subjectId: e.messageId,
        data: {
          bot_id: e.chat?.botId ?? null,
          bot_name: e.botName,
          service: messengerName(e.chat?.messenger ?? 0),
          chat_id: e.chat?.chatId ?? null,
          deliver_before: iso(e.deliverBefore),
          ...(e.expiresAt ? { expires_at: e.expiresAt.toISOString() } : {}),
          ...(e.sendAt ? { send_at: e.sendAt.toISOString() } : {}),
          ...(e.fallback ? { channel: e.fallback.channel } : {}),
        },
        change: { kind: 'routed', botId: e.chat?.botId ?? '', chatId: e.chat?.chatId ?? '' },
      };
    }
  }
}

/** A webhook delivery's attempts and its end. */
function webhookProjection(
  event: EventOf<'webhookAttempted' | 'webhookDelivered' | 'webhookDeliveryAbandoned'>,
  metadata: DashboardRecord['metadata'],
  base: Base,
): ProjectedEvent | undefined {
  switch (event.$case) {
    case 'webhookAttempted': {
      const e = event.value;
      const outcome = OUTCOMES[e.outcome] ?? 'unknown';
      return {
        ...base,
        subjectId: e.subjectId,
        data: {
          webhook_id: metadata.streamId,
          endpoint_id: endpointIdOf(e.endpointId),
          kind: e.kind,
          attempt: e.attempt,
          url: e.url,
          status_code: e.statusCode || null,
          latency_ms: e.latencyMs,
          outcome,
          error: e.error || null,
          // No answer excerpt, even from events that carry one (written before they stopped): it may echo
          // personal data; the message page shows it from the dispatcher's attempt log, which forget reaches.
          next_attempt_at: iso(e.nextAttemptAt),
        },
        change: {
          kind: 'webhook-attempt',
          webhookId: metadata.streamId,
          endpointId: endpointIdOf(e.endpointId),
          webhookKind: e.kind,
          attempt: e.attempt,
          outcome,
          statusCode: e.statusCode,
          error: e.error,
          url: e.url,
          nextAttemptAt: e.nextAttemptAt ?? null,
        },
      };
    }
    case 'webhookDelivered':
    case 'webhookDeliveryAbandoned': {
      const e = event.value;
      const delivered = event.$case === 'webhookDelivered';
      return {
        ...base,
        subjectId: e.subjectId,
        data: {
          webhook_id: metadata.streamId,
          endpoint_id: endpointIdOf(e.endpointId),
          kind: e.kind,
          attempts: e.attempts,
          ...('lastError' in e ? { last_error: e.lastError } : {}),
        },
        change: {
          kind: 'webhook-finished',
          webhookId: metadata.streamId,
          endpointId: endpointIdOf(e.endpointId),
          webhookKind: e.kind,
          delivered,
          attempts: e.attempts,
        },
      };
    }
  }
}

/** A request's `metadata` as its timeline entry shows it: only when it carried some. */
function metadataOf(metadata: RequestMetadata | undefined): { metadata?: Record<string, string> } {
  const entries = metadataEntries(metadata);
  return entries ? { metadata: entries } : {};
}

/** change_phone and client/check requests, and their outcomes. */
function clientRequestProjection(
  event: EventOf<
    'phoneChangeRequested' | 'clientCheckRequested' | 'phoneChanged' | 'phoneChangeRejected' | 'clientChecked'
  >,
  _metadata: DashboardRecord['metadata'],
  base: Base,
): ProjectedEvent | undefined {
  switch (event.$case) {
    case 'phoneChangeRequested':
      return {
        ...base,
        data: {
          old_phone: event.value.oldPhone,
          new_phone: event.value.newPhone,
          api_key_id: event.value.apiKeyId,
          ...metadataOf(event.value.requestMetadata),
        },
        change: { kind: 'request', apiKeyId: event.value.apiKeyId },
      };
    case 'clientCheckRequested':
      return {
        ...base,
        data: {
          phone_number: event.value.phoneNumber,
          api_key_id: event.value.apiKeyId,
          ...metadataOf(event.value.requestMetadata),
        },
        change: { kind: 'request', apiKeyId: event.value.apiKeyId },
      };
    case 'phoneChanged':
      return {
        ...base,
        data: {
          old_phone: event.value.oldPhone,
          new_phone: event.value.newPhone,
          links_moved: event.value.linksMoved,
        },
        change: { kind: 'none' },
      };
    case 'phoneChangeRejected':
      return {
        ...base,
        data: { error_code: event.value.errorCode, error_description: event.value.errorDescription },
        change: { kind: 'none' },
      };
    case 'clientChecked':
      return {
        ...base,
        data: {
          phone_number: event.value.phoneNumber,
          exists: event.value.exists,
          bots: event.value.bots.map((b) => ({
            service: messengerName(b.messenger),
            bot_name: b.botName,
            reachable: b.reachable,
          })),
        },
        change: { kind: 'none' },
      };
  }
}

/** People's actions on bots: no timeline (their subject is the bot), only the bot's activity. */
function botUpdateProjection(
  event: EventOf<'personStartedBot' | 'contactShared' | 'personBlockedBot' | 'personUnblockedBot'>,
  metadata: DashboardRecord['metadata'],
  base: Base,
): ProjectedEvent | undefined {
  switch (event.$case) {
    case 'personStartedBot':
    case 'contactShared':
    case 'personBlockedBot':
    case 'personUnblockedBot':
      return {
        ...base,
        timeline: false,
        data: {},
        change: { kind: 'bot-update', botId: event.value.chat?.botId ?? metadata.streamId },
      };
  }
}

/**
 * What one event means to the dashboard: its timeline entry and the change it makes to the message log,
 * the webhook deliveries, key usage or bot activity. Pure; undefined for events no page shows. Bot updates
 * have no timeline (their subject is the bot): `timeline` is false for them.
 */
export function projectEvent(record: DashboardRecord): ProjectedEvent | undefined {
  const { metadata, event } = record;
  const at = metadata.occurredAt ?? new Date(0);
  const base: Base = {
    eventId: metadata.eventId,
    companyId: metadata.companyId,
    subjectId: metadata.streamId,
    type: metadata.type || event.$case.charAt(0).toUpperCase() + event.$case.slice(1),
    at,
    producer: metadata.producer,
    timeline: true,
  };
  switch (event.$case) {
    case 'messageAccepted':
    case 'messageSent':
    case 'messageDeliveryFailed':
    case 'messageAttemptFailed':
    case 'deliveryRequested':
      return messageProjection(event, metadata, base);
    // On the timeline only: the message's outcome says what came of it.
    case 'messageCancelRequested':
      return { ...base, data: { api_key_id: event.value.apiKeyId }, change: { kind: 'none' } };
    case 'webhookAttempted':
    case 'webhookDelivered':
    case 'webhookDeliveryAbandoned':
      return webhookProjection(event, metadata, base);
    case 'phoneChangeRequested':
    case 'clientCheckRequested':
    case 'phoneChanged':
    case 'phoneChangeRejected':
    case 'clientChecked':
      return clientRequestProjection(event, metadata, base);
    case 'personStartedBot':
    case 'contactShared':
    case 'personBlockedBot':
    case 'personUnblockedBot':
      return botUpdateProjection(event, metadata, base);
    default:
      return undefined;
  }
}
