import {
  derivedEventId,
  newEvent,
  topics,
  type Complete,
  type DeliveryEvent,
  type MessageEvent,
} from '@mds/contracts';
import type { Knex } from '@mds/db';
import type { EventPublisher, OutgoingEvent } from '@mds/kafka';
import type { AccountState } from '../domain/accounts.js';
import { route, type Link, type Route } from '../domain/links.js';
import { PRODUCER } from './accounts.js';
import { linkKey, type RoutingState } from './routing-view.js';

export interface RoutingDeps {
  db: Knex;
  publisher: EventPublisher;
  /** Accounts and links as routing sees them (kept in memory, fresh from the log). */
  view: RoutingState & { drop(companyId: string, phone: string): void };
  /** The registry's state itself: a message routing would fail is decided again against it. */
  state: RoutingState;
  now: () => Date;
  deliveryDeadlineSeconds: number;
}

type Accepted = Complete<MessageEvent> & {
  event: Extract<MessageEvent['event'], { $case: 'messageAccepted' }>;
};

const topicsByName = new Map(Object.values(topics).map((t) => [t.name, t]));

/**
 * Stores each message's decision the first time; a message decided before (handled again after a crash)
 * gets its stored decision back instead of the new one, so it is never both failed and routed, nor routed
 * to two bots. One statement for the whole batch.
 */
async function rememberDecisions(
  db: Knex,
  messageIds: string[],
  decisions: OutgoingEvent[],
): Promise<OutgoingEvent[]> {
  const rows = decisions.map((e, i) => ({
    message_id: messageIds[i]!,
    topic: e.topic.name,
    key: e.key,
    payload: Buffer.from(e.topic.codec.encode(e.record)),
  }));
  const { rows: earlier } = await db.raw<{
    rows: { message_id: string; topic: string; key: string; payload: Buffer }[];
  }>(
    `with fresh as (
       insert into routed_messages (message_id, topic, key, payload)
       select * from unnest(?::uuid[], ?::text[], ?::text[], ?::bytea[])
       on conflict (message_id) do nothing
       returning message_id
     )
     select r.message_id, r.topic, r.key, r.payload from routed_messages r
     where r.message_id = any(?::uuid[]) and r.message_id not in (select message_id from fresh)`,
    [
      rows.map((r) => r.message_id),
      rows.map((r) => r.topic),
      rows.map((r) => r.key),
      rows.map((r) => r.payload),
      rows.map((r) => r.message_id),
    ],
  );
  if (earlier.length === 0) return decisions;
  const stored = new Map(earlier.map((r) => [r.message_id, r]));
  return decisions.map((decision, i) => {
    const before = stored.get(messageIds[i]!);
    if (!before) return decision;
    const topic = topicsByName.get(before.topic)!;
    return { topic, key: before.key, record: topic.codec.decode(before.payload) };
  });
}

/** Forgets decisions older than the time a message could still come again (days, not seconds). */
export async function forgetOldDecisions(db: Knex, days = 7): Promise<number> {
  return db('routed_messages')
    .where('decided_at', '<', db.raw(`now() - interval '${days} days'`))
    .delete();
}

const NO_ACCOUNT = (companyId: string): AccountState => ({
  companyId,
  name: '',
  createdAt: '',
  apiKeys: {},
  bots: {},
  defaultBots: {},
});

/** Decides where each message goes with what `state` says of its company and its number. */
async function decide(state: RoutingState, accepted: readonly Accepted[]): Promise<Route[]> {
  const accounts = await state.accounts(accepted.map((a) => a.metadata.companyId));
  const links = await state.linksOfPhones(
    accepted.map((a) => ({ companyId: a.metadata.companyId, phone: a.event.value.phoneNumber })),
  );
  return accepted.map((a) => {
    const { companyId } = a.metadata;
    const request = a.event.value;
    const messenger = request.messenger === 1 ? 'telegram' : request.messenger === 2 ? 'max' : undefined;
    // An event from a newer gateway with a messenger this build does not know fails; it must not stop
    // the partition.
    if (!messenger)
      return {
        routed: false,
        errorCode: 'UNKNOWN_BOT',
        errorDescription: `unknown messenger ${request.messenger}`,
      };
    const linksOfPhone: Link[] = links.get(linkKey(companyId, request.phoneNumber)) ?? [];
    return route(
      { messenger, botName: request.botName },
      accounts.get(companyId) ?? NO_ACCOUNT(companyId),
      linksOfPhone,
    );
  });
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
  if (!decision.routed) {
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
  const request = a.event.value;
  const acceptedAt = a.metadata.occurredAt ?? at;
  return {
    topic: decision.bot.messenger === 'telegram' ? topics.deliveryTelegram : topics.deliveryMax,
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
          text: request.text,
          buttons: request.buttons,
          acceptedAt,
          deliverBefore: new Date(acceptedAt.getTime() + deadlineSeconds * 1000),
        },
      },
    }),
  };
}

/**
 * Routes accepted messages to a bot and a chat, from accounts and links kept in memory. A message that
 * would fail is decided again against the registry's state itself (memory may lag the log by a moment), so
 * a client linked a moment ago is found. It changes no state, so it publishes directly; the ids of what it
 * publishes derive from the accepted event's id, and each decision is remembered, so a batch handled twice
 * yields the same events.
 */
export function createRouting(deps: RoutingDeps) {
  return {
    async handleMessages(records: Complete<MessageEvent>[]): Promise<void> {
      const accepted = records.filter((r): r is Accepted => r.event.$case === 'messageAccepted');
      if (accepted.length === 0) return;
      const decisions = await decide(deps.view, accepted);
      const doubtful = accepted.filter((_a, i) => !decisions[i]!.routed);
      if (doubtful.length > 0) {
        for (const a of doubtful) deps.view.drop(a.metadata.companyId, a.event.value.phoneNumber);
        const again = await decide(deps.state, doubtful);
        for (const [i, a] of doubtful.entries()) decisions[accepted.indexOf(a)] = again[i]!;
      }
      const at = deps.now();
      const out = accepted.map((a, i) => decisionEvent(a, decisions[i]!, at, deps.deliveryDeadlineSeconds));
      const messageIds = accepted.map((a) => a.metadata.streamId);
      await deps.publisher.publish(await rememberDecisions(deps.db, messageIds, out));
    },
  };
}
