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
import { route, type Route } from '../domain/links.js';
import { loadAccounts } from '../adapters/db/accounts-store.js';
import { linksOfPhones } from '../adapters/db/links-store.js';
import { PRODUCER } from './accounts.js';

export interface RoutingDeps {
  db: Knex;
  publisher: EventPublisher;
  now: () => Date;
  deliveryDeadlineSeconds: number;
}

/**
 * Routes accepted messages to a bot and a chat. It changes no state, so it publishes directly; the ids of
 * what it publishes derive from the accepted event's id, so a batch handled twice yields the same events.
 */
const topicsByName = new Map(Object.values(topics).map((t) => [t.name, t]));

/**
 * Stores each message's decision the first time; a message decided before (handled again after a crash)
 * gets its stored decision back instead of the new one, so it is never both failed and routed, nor routed
 * to two bots.
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
  const inserted = await db('routed_messages')
    .insert(rows)
    .onConflict('message_id')
    .ignore()
    .returning<{ message_id: string }[]>('message_id');
  if (inserted.length === rows.length) return decisions;
  const fresh = new Set(inserted.map((r) => r.message_id));
  const earlier = await db('routed_messages')
    .whereIn(
      'message_id',
      rows.filter((r) => !fresh.has(r.message_id)).map((r) => r.message_id),
    )
    .select<{ message_id: string; topic: string; key: string; payload: Buffer }[]>();
  const stored = new Map(earlier.map((r) => [r.message_id, r]));
  return decisions.map((decision, i) => {
    const before = fresh.has(messageIds[i]!) ? undefined : stored.get(messageIds[i]!);
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

export function createRouting(deps: RoutingDeps) {
  return {
    async handleMessages(records: Complete<MessageEvent>[]): Promise<void> {
      const accepted = records.flatMap((r) =>
        r.event.$case === 'messageAccepted' ? [{ record: r, request: r.event.value }] : [],
      );
      if (accepted.length === 0) return;
      const accounts = await loadAccounts(deps.db, [
        ...new Set(accepted.map((a) => a.record.metadata.companyId)),
      ]);
      const links = await linksOfPhones(
        deps.db,
        accepted.map((a) => ({ companyId: a.record.metadata.companyId, phone: a.request.phoneNumber })),
      );
      const at = deps.now();
      const out: OutgoingEvent[] = accepted.map(({ record, request }) => {
        const { companyId, streamId: messageId, eventId } = record.metadata;
        const messenger = request.messenger === 1 ? 'telegram' : request.messenger === 2 ? 'max' : undefined;
        const account: AccountState = accounts.get(companyId) ?? {
          companyId,
          name: '',
          createdAt: '',
          apiKeys: {},
          bots: {},
          defaultBots: {},
        };
        // An event from a newer gateway with a messenger this build does not know fails; it must not stop
        // the partition.
        const decision: Route = messenger
          ? route(
              { messenger, botName: request.botName },
              account,
              links.get(`${companyId}/${request.phoneNumber}`) ?? [],
            )
          : {
              routed: false,
              errorCode: 'UNKNOWN_BOT',
              errorDescription: `unknown messenger ${request.messenger}`,
            };
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
        const acceptedAt = record.metadata.occurredAt ?? at;
        return {
          topic: messenger === 'telegram' ? topics.deliveryTelegram : topics.deliveryMax,
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
                deliverBefore: new Date(acceptedAt.getTime() + deps.deliveryDeadlineSeconds * 1000),
              },
            },
          }),
        };
      });
      await deps.publisher.publish(
        await rememberDecisions(
          deps.db,
          accepted.map((a) => a.record.metadata.streamId),
          out,
        ),
      );
    },
  };
}
