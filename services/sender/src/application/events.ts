import {
  cleanText,
  derivedEventId,
  messageErrorCodes,
  newEvent,
  type CleanText,
  UnreachableReason,
  type BotChat,
  type BotUpdateEvent,
  type Complete,
  type DeliveryRequested,
  type FallbackRoute,
  type DeliveryEvent,
  type Messenger,
  type MessageEvent,
} from '@mds/contracts';
import type { BotFact } from '@mds/messengers';
import type { Unreachable } from '../domain/attempt.js';
import { ID_CHARS, OUTCOME_DESCRIPTION_CHARS } from '../domain/outside-text.js';
import type { Decided } from '../domain/delivery.js';
import { attemptOf, channelEnd, decidingRoute, journalKey } from '../domain/channel.js';

export type DeliveryRequest = Complete<DeliveryEvent> & {
  event: Extract<DeliveryEvent['event'], { $case: 'deliveryRequested' }>;
};

/** The message's expiry (ttl_seconds) a work order carries, if any. */
export const expiresAtMsOf = (request: DeliveryRequest): number | undefined =>
  request.event.value.expiresAt?.getTime();

export type UnroutableDelivery = Complete<DeliveryEvent> & {
  event: Extract<DeliveryEvent['event'], { $case: 'deliveryUnroutable' }>;
};

export type { Decided };

const REASON: Record<Unreachable, UnreachableReason> = {
  blocked: UnreachableReason.UNREACHABLE_REASON_BLOCKED,
  deactivated: UnreachableReason.UNREACHABLE_REASON_DEACTIVATED,
  'send-rejected': UnreachableReason.UNREACHABLE_REASON_SEND_REJECTED,
};

/** What an order says of its message and its channel (a message with a fallback). */
interface ChannelOrder {
  messageId: string;
  fallback?: FallbackRoute | undefined;
}

/** The journal key of the channel an order is for (domain/channel.ts). */
export const keyOf = (order: ChannelOrder): string => journalKey(order.messageId, order.fallback);

/**
 * The one outcome event of a channel of a message. Its id derives from the channel's journal key (the
 * message id for its own channel), so republishing it is a no-op and each channel's is its own.
 */
function messageOutcome(
  cause: Complete<DeliveryEvent>,
  order: ChannelOrder,
  at: Date,
  producer: string,
  event: NonNullable<MessageEvent['event']>,
): Complete<MessageEvent> {
  const { messageId } = order;
  return newEvent<MessageEvent>({
    eventId: derivedEventId(keyOf(order), 'outcome'),
    occurredAt: at,
    companyId: cause.metadata.companyId,
    streamId: messageId,
    correlationId: messageId,
    causationId: cause.metadata.eventId,
    producer,
    event,
  });
}

/** What a channel's failure carries on to the next channel's routing (routing keeps nothing of a message). */
type PassedOn = Pick<DeliveryRequested, 'acceptedAt' | 'expiresAt' | 'sendAt' | 'sealed'>;

/**
 * A channel's failure: MessageAttemptFailed when the person is not reachable there and channels are left
 * (the message stays new, the registry routes the next one), else the message's MessageDeliveryFailed.
 */
function failureEvent(
  order: ChannelOrder & PassedOn,
  failure: { errorCode: string; errorDescription: string; attempts: number; botId: string },
  at: Date,
  earlierCallMayHaveReached = false,
): NonNullable<MessageEvent['event']> {
  const end = channelEnd(order.fallback, failure.errorCode, earlierCallMayHaveReached);
  if (end.kind === 'next') {
    const { errorCode, errorDescription, botId } = failure;
    return {
      $case: 'messageAttemptFailed',
      value: {
        route: end.route,
        attempt: attemptOf(end.route, { botId, errorCode, errorDescription, failedAt: at }),
        acceptedAt: order.acceptedAt,
        expiresAt: order.expiresAt,
        sendAt: order.sendAt,
        sealed: order.sealed,
      },
    };
  }
  return {
    $case: 'messageDeliveryFailed',
    value: { ...failure, failedAt: at, ...(end.fallback ? { fallback: end.fallback } : {}) },
  };
}

/**
 * The outcome of a message after its calls. `unconfirmed` is the sender's UNCONFIRMED_SENDS: with `retry`, a
 * call before the last may have reached the person, so a failure after it never passes the message on.
 */
export function outcomeEvent(
  request: DeliveryRequest,
  decided: Decided,
  attempts: number,
  at: Date,
  producer: string,
  unconfirmed: 'fail' | 'retry',
): Complete<MessageEvent> {
  const d = request.event.value;
  const botId = d.chat?.botId ?? '';
  const fallback = decidingRoute(d.fallback);
  return messageOutcome(
    request,
    d,
    at,
    producer,
    decided.kind === 'sent'
      ? {
          $case: 'messageSent',
          value: {
            botId,
            providerMessageId: cleanText(decided.providerMessageId, ID_CHARS),
            sentAt: at,
            attempts,
            ...(fallback ? { fallback } : {}),
          },
        }
      : failureEvent(
          d,
          {
            errorCode: decided.code,
            // Built around a messenger's words, each cleaned already: bounded as a whole.
            errorDescription: cleanText(decided.description, OUTCOME_DESCRIPTION_CHARS),
            attempts,
            botId,
          },
          at,
          unconfirmed === 'retry' && attempts > 1,
        ),
  );
}

/** The outcome of a message the registry found no route for: failed, with the registry's reason. */
export function unroutableOutcome(
  order: UnroutableDelivery,
  at: Date,
  producer: string,
): Complete<MessageEvent> {
  const d = order.event.value;
  const { errorCode, errorDescription } = d;
  return messageOutcome(
    order,
    d,
    at,
    producer,
    failureEvent(d, { errorCode, errorDescription, attempts: 0, botId: '' }, at),
  );
}

export type CancelDelivery = Complete<DeliveryEvent> & {
  event: Extract<DeliveryEvent['event'], { $case: 'deliveryCancelRequested' }>;
};

/** The outcome of a message canceled before any call: failed CANCELED (naming the channel canceled). */
export function canceledOutcome(order: CancelDelivery, at: Date, producer: string): Complete<MessageEvent> {
  const failure = { errorCode: 'CANCELED', errorDescription: messageErrorCodes.CANCELED };
  const d = order.event.value;
  return messageOutcome(order, d, at, producer, failureEvent(d, { ...failure, attempts: 0, botId: '' }, at));
}

/** The send_at a work order carries, if any. */
export const sendAtOf = (request: DeliveryRequest): Date | undefined => request.event.value.sendAt;

/** A send rejected because the person is unreachable tells the registry, as an update would. */
export function unreachableEvent(
  request: DeliveryRequest,
  unreachable: Unreachable,
  at: Date,
  producer: string,
): Complete<BotUpdateEvent> {
  const d = request.event.value;
  return newEvent<BotUpdateEvent>({
    eventId: derivedEventId(keyOf(d), 'unreachable'),
    occurredAt: at,
    companyId: request.metadata.companyId,
    streamId: d.chat!.botId,
    correlationId: d.messageId,
    causationId: request.metadata.eventId,
    producer,
    event: {
      $case: 'personBlockedBot',
      value: { chat: d.chat!, providerUpdateId: `send:${d.messageId}`, reason: REASON[unreachable] },
    },
  });
}

/**
 * The event of one fact read from a bot's updates. Its id derives from the bot and the provider's update
 * id, so an update read twice (a restart before the cursor was saved, two pollers during a handover) is
 * one event to every consumer.
 */
export function botUpdateEvent(
  bot: { botId: string; companyId: string },
  messenger: Messenger,
  fact: BotFact<CleanText>,
  at: Date,
  producer: string,
): Complete<BotUpdateEvent> {
  const chat: BotChat = { messenger, botId: bot.botId, chatId: fact.chatId, userId: fact.userId };
  const providerUpdateId = fact.updateId;
  const event: NonNullable<BotUpdateEvent['event']> = (() => {
    switch (fact.kind) {
      case 'started':
        return { $case: 'personStartedBot' as const, value: { chat, providerUpdateId } };
      case 'contact-shared':
        return {
          $case: 'contactShared' as const,
          value: { chat, providerUpdateId, phoneNumber: fact.phone },
        };
      case 'blocked':
        return {
          $case: 'personBlockedBot' as const,
          value: {
            chat,
            providerUpdateId,
            reason:
              fact.reason === 'stopped'
                ? UnreachableReason.UNREACHABLE_REASON_STOPPED
                : UnreachableReason.UNREACHABLE_REASON_BLOCKED,
          },
        };
      case 'unblocked':
        return { $case: 'personUnblockedBot' as const, value: { chat, providerUpdateId } };
    }
  })();
  return newEvent<BotUpdateEvent>({
    // Namespaced by bot: update ids are only unique per bot.
    eventId: derivedEventId(bot.botId, `update/${fact.kind}/${fact.updateId}`),
    occurredAt: at,
    companyId: bot.companyId,
    streamId: bot.botId,
    producer,
    event,
  });
}
