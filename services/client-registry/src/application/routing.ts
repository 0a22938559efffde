import {
  derivedEventId,
  messageErrorCodes,
  messengerNameOf,
  newEvent,
  topics,
  type Complete,
  type DeliveryEvent,
  type MessageEvent,
  deliveryTopic,
} from '@mds/contracts';
import type { EventPublisher, OutgoingEvent } from '@mds/kafka';
import { SpanKind, startHop } from '@mds/telemetry';
import type { AccountState } from '../domain/accounts.js';
import { route, type Link, type Route } from '../domain/links.js';
import { PRODUCER } from './accounts.js';
import { isErased, openRecords, type PersonKeyPort } from '@mds/personal-data';
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
async function decide(state: RoutingState, accepted: readonly Accepted[], at: Date): Promise<Route[]> {
  const accounts = await state.accounts(accepted.map((a) => a.metadata.companyId));
  const links = await state.linksOfPhones(
    accepted.map((a) => ({ companyId: a.metadata.companyId, phone: a.event.value.phoneNumber })),
  );
  return accepted.map((a) => {
    const { companyId } = a.metadata;
    const request = a.event.value;
    const messenger = messengerNameOf(request.messenger);
    if (isErased(request)) return { routed: false, ...CLIENT_FORGOTTEN };
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
 * the work order. A messenger this build does not know has no sender: nothing to cancel there.
 */
function cancelEvent(c: CancelRequest): OutgoingEvent | undefined {
  const messenger = messengerNameOf(c.event.value.messenger);
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
      event: { $case: 'deliveryCancelRequested', value: { messageId } },
    }),
  };
}

/** The event a decision makes: a delivery to the chosen bot, or the message's failure. */
function decisionEvent(a: Accepted, decision: Route, at: Date, deadlineSeconds: number): OutgoingEvent {
  const { companyId, streamId: messageId, eventId } = a.metadata;
  const envelope = {
    occurredAt: at,
    companyId,
    correlationId: messageId,
    causationId: eventId,
    producer: PRODUCER,
  };
  const request = a.event.value;
  const acceptedAt = a.metadata.occurredAt ?? at;
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
 * event's id.
 */
export function createRouting(deps: RoutingDeps) {
  async function route(sealed: Accepted[]): Promise<void> {
    if (sealed.length === 0) return;
    const accepted = await openRecords(deps.keys, sealed);
    const at = deps.now();
    const decisions = await decide(deps.view, accepted, at);
    const doubtful = accepted.filter((_a, i) => !decisions[i]!.routed);
    if (doubtful.length > 0) {
      for (const a of doubtful) deps.view.drop(a.metadata.companyId, a.event.value.phoneNumber);
      const again = await decide(deps.state, doubtful, at);
      for (const [i, a] of doubtful.entries()) decisions[accepted.indexOf(a)] = again[i]!;
    }
    // One hop of each message's trace, from the accepted event to its decision being in Kafka.
    const hops = accepted.map((a) =>
      startHop('registry route', a.metadata, {
        kind: SpanKind.CONSUMER,
        attributes: { 'mds.message_id': a.metadata.streamId },
      }),
    );
    const out = accepted.map((a, i) =>
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

  return {
    async handleMessages(records: Complete<MessageEvent>[]): Promise<void> {
      // Published after the batch's work orders (a cancel of a message of this batch comes after it).
      const cancels = records
        .filter((r): r is CancelRequest => r.event.$case === 'messageCancelRequested')
        .map(cancelEvent)
        .filter((e) => e !== undefined);
      await route(records.filter((r): r is Accepted => r.event.$case === 'messageAccepted'));
      if (cancels.length > 0) await deps.publisher.publish(cancels);
    },
  };
}
