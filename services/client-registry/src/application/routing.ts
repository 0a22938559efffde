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
import { messengerName, type AccountState } from '../domain/accounts.js';
import { route } from '../domain/links.js';
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
        const messenger = messengerName(request.messenger);
        const account: AccountState = accounts.get(companyId) ?? {
          companyId,
          name: '',
          createdAt: '',
          apiKeys: {},
          bots: {},
          defaultBots: {},
        };
        const decision = route(
          { messenger, botName: request.botName },
          account,
          links.get(`${companyId}/${request.phoneNumber}`) ?? [],
        );
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
      await deps.publisher.publish(out);
    },
  };
}
