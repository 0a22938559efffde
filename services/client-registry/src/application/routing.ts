import {
  derivedEventId,
  messageErrorCodes,
  messengerNameOf,
  routeAfter,
  newEvent,
  topics,
  type Complete,
  type DeliveryEvent,
  type EventMetadata,
  type FallbackRoute,
  type LinkButton,
  type MessageEvent,
  type SealedPersonalData,
  deliveryTopic,
} from '@mds/contracts';
import type { EventPublisher, OutgoingEvent } from '@mds/kafka';
import { SpanKind, startHop } from '@mds/telemetry';
import type { AccountState } from '../domain/accounts.js';
import { resolved, route, type Link, type Route } from '../domain/links.js';
import { PRODUCER } from './accounts.js';
import { isErased, openRecords, openSealed, type PersonKeyPort } from '@mds/personal-data';
import { linkKey, type RoutingState } from './routing-view.js';

export interface RoutingDeps {
  publisher: EventPublisher;
  /** Accounts and links as routing sees them (kept in memory, fresh from the log). */
  view: RoutingState & { drop(companyId: string, phone: string): void };
  /** The registry's state itself: a message routing would fail is decided again against it. */
  state: RoutingState;
  now: () => Date;
  deliveryDeadlineSeconds: number;
  /** Opens the sealed number and text of each message. */
  keys: PersonKeyPort;
}

/** A message whose person was forgotten before it was routed: its number and text are erased. */
const CLIENT_FORGOTTEN = {
  errorCode: 'CLIENT_FORGOTTEN',
  errorDescription: messageErrorCodes.CLIENT_FORGOTTEN,
} as const;

type Accepted = Complete<MessageEvent> & {
  event: Extract<MessageEvent['event'], { $case: 'messageAccepted' }>;
};

type AttemptFailed = Complete<MessageEvent> & {
  event: Extract<MessageEvent['event'], { $case: 'messageAttemptFailed' }>;
};

/**
 * One channel of a message to route: its own (MessageAccepted), or the next of its fallback (a
 * MessageAttemptFailed of the one before). `metadata` is the event it comes from: what is published for
 * it derives its ids from that event's id.
 */
interface Order {
  metadata: EventMetadata & { companyId: string; streamId: string; eventId: string };
  messenger: number;
  botName: string;
  phoneNumber: string;
  /** Its person was forgotten: the number and text are erased. */
  erased: boolean;
  acceptedAt: Date | undefined;
  expiresAt: Date | undefined;
  sendAt: Date | undefined;
  sealed: SealedPersonalData | undefined;
  /** Plain, from an older gateway (nothing sealed). */
  text: string;
  buttons: LinkButton[];
  /** A message with a fallback: the channel this is (current.bot_name as requested). */
  fallback: FallbackRoute | undefined;
}

const orderOfAccepted = (a: Accepted): Order => {
  const r = a.event.value;
  return {
    metadata: a.metadata,
    messenger: r.messenger,
    botName: r.botName,
    phoneNumber: r.phoneNumber,
    erased: isErased(r),
    acceptedAt: a.metadata.occurredAt,
    expiresAt: r.expiresAt,
    sendAt: r.sendAt,
    sealed: r.sealed,
    text: r.text,
    buttons: r.buttons,
    fallback: r.fallback,
  };
};

/** The next channel of a message whose channel could not reach the person; its number opened from `sealed`. */
async function orderOfAttemptFailed(keys: PersonKeyPort, f: AttemptFailed): Promise<Order | undefined> {
  const v = f.event.value;
  const fallback = v.route && v.attempt && routeAfter(v.route, v.attempt);
  if (!fallback?.current) return undefined;
  // A gateway that writes `fallback` seals every message: none sealed, or its key destroyed, is a person
  // forgotten (CLIENT_FORGOTTEN).
  const opened = v.sealed && (await openSealed(keys, f.metadata.companyId, v.sealed));
  return {
    metadata: f.metadata,
    messenger: fallback.current.messenger,
    botName: fallback.current.botName,
    phoneNumber: opened ? opened.phoneNumber : '',
    erased: !opened,
    acceptedAt: v.acceptedAt,
    expiresAt: v.expiresAt,
    sendAt: v.sendAt,
    sealed: v.sealed,
    text: '',
    buttons: [],
    fallback,
  };
}

/**
 * A MessageAttemptFailed naming no channel left (this build's senders never write one: they end the message
 * there instead) would leave its message new forever: it ends failed here with the channel's own failure, the
 * only outcome it can have, since no channel is left to decide another.
 */
function withoutNextChannel(f: AttemptFailed): OutgoingEvent | undefined {
  const { route: failed, attempt } = f.event.value;
  if (failed && attempt && routeAfter(failed, attempt)) return undefined;
  const { companyId, streamId: messageId, eventId } = f.metadata;
  return {
    topic: topics.message,
    key: messageId,
    record: newEvent<MessageEvent>({
      eventId: derivedEventId(eventId, 'routing-failed'),
      occurredAt: f.metadata.occurredAt ?? new Date(),
      companyId,
      streamId: messageId,
      correlationId: messageId,
      causationId: eventId,
      producer: PRODUCER,
      event: {
        $case: 'messageDeliveryFailed',
        value: {
          errorCode: attempt?.errorCode || 'CLIENT_NOT_FOUND',
          errorDescription: attempt?.errorDescription ?? '',
          failedAt: attempt?.failedAt ?? f.metadata.occurredAt ?? new Date(),
          attempts: 0,
          botId: attempt?.botId ?? '',
          ...(failed ? { fallback: { ...failed, next: [] } } : {}),
        },
      },
    }),
  };
}

const NO_ACCOUNT = (companyId: string): AccountState => ({
  companyId,
  name: '',
  createdAt: '',
  apiKeys: {},
  webhookEndpoints: [],
  bots: {},
  defaultBots: {},
});

/** Decides where each message goes with what `state` says of its company and its number. */
async function decide(state: RoutingState, orders: readonly Order[], at: Date): Promise<Route[]> {
  const accounts = await state.accounts(orders.map((a) => a.metadata.companyId));
  const links = await state.linksOfPhones(
    orders.map((a) => ({ companyId: a.metadata.companyId, phone: a.phoneNumber })),
  );
  return orders.map((request) => {
    const { companyId } = request.metadata;
    const messenger = messengerNameOf(request.messenger);
    if (request.erased) return { routed: false, ...CLIENT_FORGOTTEN };
    // An event from a newer gateway with a messenger this build does not know fails; it must not stop
    // the partition.
    if (!messenger)
      return {
        routed: false,
        errorCode: 'UNKNOWN_BOT',
        errorDescription: `unknown messenger ${request.messenger}`,
      };
    const linksOfPhone: Link[] = links.get(linkKey(companyId, request.phoneNumber)) ?? [];
    const expired = request.expiresAt !== undefined && request.expiresAt <= at;
    return route(
      { messenger, botName: request.botName, expired },
      accounts.get(companyId) ?? NO_ACCOUNT(companyId),
      linksOfPhone,
    );
  });
}

type CancelRequest = Complete<MessageEvent> & {
  event: Extract<MessageEvent['event'], { $case: 'messageCancelRequested' }>;
};

const startOf = (acceptedAt: Date, sendAt: Date | undefined) =>
  Math.max(acceptedAt.getTime(), sendAt?.getTime() ?? 0);

/**
 * A cancel, passed on to the sender of the message's messenger, whose journal decides it with the message's
 * other outcomes. Keyed by the message (not its bot, which routing does not keep): the journal is shared by
 * every replica of that sender, so the cancel is decided right whichever one reads it, and before or after
 * the work order. A messenger this build does not know has no sender: nothing to cancel there. A message
 * with a fallback names the channel it was at (the gateway's `messenger` is that channel's): its sender
 * cancels that channel's journal entry.
 */
function cancelEvent(c: CancelRequest): OutgoingEvent | undefined {
  const { messenger: code, fallback } = c.event.value;
  const messenger = messengerNameOf(code);
  if (!messenger) return undefined;
  const { companyId, streamId: messageId, eventId } = c.metadata;
  return {
    topic: deliveryTopic(messenger),
    key: messageId,
    record: newEvent<DeliveryEvent>({
      eventId: derivedEventId(eventId, 'cancel'),
      occurredAt: c.metadata.occurredAt ?? new Date(),
      companyId,
      streamId: messageId,
      correlationId: messageId,
      causationId: eventId,
      producer: PRODUCER,
      event: {
        $case: 'deliveryCancelRequested',
        value: { messageId, ...(fallback ? { fallback } : {}) },
      },
    }),
  };
}

/** The event a decision makes: a delivery to the chosen bot, or the message's failure. */
function decisionEvent(request: Order, decision: Route, at: Date, deadlineSeconds: number): OutgoingEvent {
  const { companyId, streamId: messageId, eventId } = request.metadata;
  const envelope = {
    occurredAt: at,
    companyId,
    correlationId: messageId,
    causationId: eventId,
    producer: PRODUCER,
  };
  const acceptedAt = request.acceptedAt ?? at;
  const { fallback } = request;
  if (!decision.routed) {
    const messenger = messengerNameOf(request.messenger);
    if (messenger) {
      // Failed by the sender of its messenger, where every outcome of a message is decided once.
      return {
        topic: deliveryTopic(messenger),
        key: messageId,
        record: newEvent<DeliveryEvent>({
          ...envelope,
          eventId: derivedEventId(eventId, 'unroutable'),
          streamId: messageId,
          event: {
            $case: 'deliveryUnroutable',
            value: {
              messageId,
              errorCode: decision.errorCode,
              errorDescription: decision.errorDescription,
              acceptedAt,
              // What its sender needs to pass the message on to its next channel (MessageAttemptFailed).
              ...(fallback
                ? {
                    fallback: decision.bot ? resolved(fallback, decision.bot.name) : fallback,
                    expiresAt: request.expiresAt,
                    sendAt: request.sendAt,
                    sealed: request.sealed,
                  }
                : {}),
            },
          },
        }),
      };
    }
    // A messenger this build does not know: no sender could decide otherwise, so it fails here.
    return {
      topic: topics.message,
      key: messageId,
      record: newEvent<MessageEvent>({
        ...envelope,
        eventId: derivedEventId(eventId, 'routing-failed'),
        streamId: messageId,
        event: {
          $case: 'messageDeliveryFailed',
          value: {
            errorCode: decision.errorCode,
            errorDescription: decision.errorDescription,
            failedAt: at,
            attempts: 0,
            botId: '',
            ...(fallback ? { fallback: { ...fallback, next: [] } } : {}),
          },
        },
      }),
    };
  }
  return {
    topic: deliveryTopic(decision.bot.messenger),
    key: decision.bot.botId,
    record: newEvent<DeliveryEvent>({
      ...envelope,
      eventId: derivedEventId(eventId, 'routed'),
      streamId: decision.bot.botId,
      event: {
        $case: 'deliveryRequested',
        value: {
          messageId,
          chat: decision.link.chat,
          botName: decision.bot.name,
          // Sealed as it came (the sender opens it with the same person key), or plain from an older gateway.
          ...(request.sealed
            ? { text: '', buttons: [], sealed: request.sealed }
            : { text: request.text, buttons: request.buttons }),
          acceptedAt,
          // A scheduled message's deadline counts from its time (its expiry still from acceptance).
          deliverBefore: new Date(startOf(acceptedAt, request.sendAt) + deadlineSeconds * 1000),
          ...(request.expiresAt ? { expiresAt: request.expiresAt } : {}),
          ...(request.sendAt ? { sendAt: request.sendAt } : {}),
          ...(fallback ? { fallback: resolved(fallback, decision.bot.name) } : {}),
        },
      },
    }),
  };
}

/**
 * Routes accepted messages to a bot and a chat, from accounts and links kept in memory. A message that
 * would fail is decided again against the registry's state itself (memory may lag the log by a moment), so
 * a client linked a moment ago is found. It changes no state and stores nothing: it publishes its decision
 * to the sender of the message's messenger (a work order, or "unroutable"), whose journal keeps the first
 * decision that reaches it. A message routed again after a crash, even differently (a link changed
 * meanwhile), so still ends with one outcome, and the ids of what it publishes derive from the accepted
 * event's id. A message with a fallback is routed channel by channel the same way: its own channel from
 * MessageAccepted, each next one from the MessageAttemptFailed of the one before (ids derived from that).
 */
export function createRouting(deps: RoutingDeps) {
  async function route(orders: Order[]): Promise<void> {
    if (orders.length === 0) return;
    const at = deps.now();
    const decisions = await decide(deps.view, orders, at);
    const doubtful = orders.filter((_a, i) => !decisions[i]!.routed);
    if (doubtful.length > 0) {
      for (const a of doubtful) deps.view.drop(a.metadata.companyId, a.phoneNumber);
      const again = await decide(deps.state, doubtful, at);
      for (const [i, a] of doubtful.entries()) decisions[orders.indexOf(a)] = again[i]!;
    }
    // One hop of each message's trace, from the accepted event to its decision being in Kafka.
    const hops = orders.map((a) =>
      startHop('registry route', a.metadata, {
        kind: SpanKind.CONSUMER,
        attributes: { 'mds.message_id': a.metadata.streamId },
      }),
    );
    const out = orders.map((a, i) =>
      hops[i]!.run(() => decisionEvent(a, decisions[i]!, at, deps.deliveryDeadlineSeconds)),
    );
    try {
      await deps.publisher.publish(out);
    } catch (error) {
      for (const hop of hops) hop.end(error);
      throw error;
    }
    for (const hop of hops) hop.end();
  }

  /** The channels to route in a batch, in its order: accepted messages, and the next channel of failed ones. */
  async function ordersOf(records: Complete<MessageEvent>[]): Promise<Order[]> {
    const orders = await Promise.all(
      records.map(async (r) => {
        if (r.event.$case === 'messageAttemptFailed')
          return orderOfAttemptFailed(deps.keys, r as AttemptFailed);
        if (r.event.$case !== 'messageAccepted') return undefined;
        const [accepted] = await openRecords(deps.keys, [r as Accepted]);
        return orderOfAccepted(accepted!);
      }),
    );
    return orders.filter((o) => o !== undefined);
  }

  return {
    async handleMessages(records: Complete<MessageEvent>[]): Promise<void> {
      // Published after the batch's work orders (a cancel of a message of this batch comes after it).
      const cancels = records
        .filter((r): r is CancelRequest => r.event.$case === 'messageCancelRequested')
        .map(cancelEvent)
        .filter((e) => e !== undefined);
      const ended = records
        .filter((r): r is AttemptFailed => r.event.$case === 'messageAttemptFailed')
        .map(withoutNextChannel)
        .filter((e) => e !== undefined);
      await route(await ordersOf(records));
      if (cancels.length + ended.length > 0) await deps.publisher.publish([...ended, ...cancels]);
    },
  };
}
