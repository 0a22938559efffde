import {
  derivedEventId,
  newEvent,
  topics,
  type BotUpdateEvent,
  type ClientEvent,
  type ClientRequestEvent,
  type Complete,
} from '@mds/contracts';
import { firstTimeSeen, type Knex } from '@mds/db';
import type { OutgoingEvent } from '@mds/kafka';
import {
  checkClient,
  decideBotUpdate,
  decidePhoneChange,
  type BotUpdate,
  type ClientEventCase,
  type ClientRequestOutcome,
} from '../domain/links.js';
import { companyOfBot, loadAccount, lockCompany } from '../adapters/db/accounts-store.js';
import { applyClientEvent, linksOfChat, linksOfPhone } from '../adapters/db/links-store.js';
import { appendToOutbox } from '@mds/outbox';
import { PRODUCER } from './accounts.js';

const CONSUMER = 'client-registry.links';

export interface LinksDeps {
  db: Knex;
  now: () => Date;
  onCommitted: () => void;
}

function toBotUpdate(event: NonNullable<BotUpdateEvent['event']>, at: Date | undefined): BotUpdate {
  switch (event.$case) {
    case 'personStartedBot':
      return { at, kind: 'started', chat: event.value.chat! };
    case 'contactShared':
      return { at, kind: 'contactShared', chat: event.value.chat!, phone: event.value.phoneNumber };
    case 'personBlockedBot':
      return { at, kind: 'blocked', chat: event.value.chat!, reason: event.value.reason };
    case 'personUnblockedBot':
      return { at, kind: 'unblocked', chat: event.value.chat! };
  }
}

/**
 * People's actions on bots and the change_phone / client/check requests: each decided in its own
 * transaction under the company's lock, with its effects, its events and its dedupe mark stored together.
 */
export function createLinks(deps: LinksDeps) {
  function clientRecords(
    companyId: string,
    cause: Complete<BotUpdateEvent | ClientRequestEvent>,
    events: ClientEventCase[],
    at: Date,
  ): OutgoingEvent[] {
    return events.map((event, i) => ({
      topic: topics.client,
      key: companyId,
      record: newEvent<ClientEvent>({
        eventId: derivedEventId(cause.metadata.eventId, `client/${i}`),
        occurredAt: at,
        companyId,
        streamId: companyId,
        correlationId: cause.metadata.correlationId || cause.metadata.streamId,
        causationId: cause.metadata.eventId,
        producer: PRODUCER,
        event,
      }),
    }));
  }

  function outcomeRecord(
    cause: Complete<ClientRequestEvent>,
    event: ClientRequestOutcome,
    at: Date,
  ): OutgoingEvent {
    const requestId = cause.metadata.streamId;
    return {
      topic: topics.clientRequest,
      key: requestId,
      record: newEvent<ClientRequestEvent>({
        eventId: derivedEventId(cause.metadata.eventId, 'outcome'),
        occurredAt: at,
        companyId: cause.metadata.companyId,
        streamId: requestId,
        correlationId: requestId,
        causationId: cause.metadata.eventId,
        producer: PRODUCER,
        event,
      }),
    };
  }

  async function once(eventId: string, work: (trx: Knex.Transaction) => Promise<boolean>): Promise<void> {
    const wrote = await deps.db.transaction(async (trx) => {
      if (!(await firstTimeSeen(trx, CONSUMER, eventId))) return false;
      return work(trx);
    });
    if (wrote) deps.onCommitted();
  }

  return {
    async handleBotUpdate(record: Complete<BotUpdateEvent>): Promise<void> {
      const update = toBotUpdate(record.event, record.metadata.occurredAt);
      await once(record.metadata.eventId, async (trx) => {
        // The bot decides the company, not what the update claims.
        const companyId = await companyOfBot(trx, update.chat.botId);
        if (!companyId) return false;
        await lockCompany(trx, companyId);
        const linksOfPhoneOnBot =
          update.kind === 'contactShared'
            ? (await linksOfPhone(trx, companyId, update.phone)).filter(
                (l) => l.chat.botId === update.chat.botId,
              )
            : [];
        const events = decideBotUpdate(update, {
          linksOfChat: await linksOfChat(trx, companyId, update.chat.botId, update.chat.chatId),
          linksOfPhoneOnBot,
        });
        // The link events occur when the fact did (a rebuild from them then has the same times).
        const at = update.at ?? deps.now();
        for (const event of events) await applyClientEvent(trx, companyId, event, at.toISOString());
        await appendToOutbox(trx, clientRecords(companyId, record, events, at));
        return events.length > 0;
      });
    },

    async handleClientRequest(record: Complete<ClientRequestEvent>): Promise<void> {
      const { event, metadata } = record;
      if (event.$case !== 'phoneChangeRequested' && event.$case !== 'clientCheckRequested') return;
      const companyId = metadata.companyId;
      await once(metadata.eventId, async (trx) => {
        await lockCompany(trx, companyId);
        const at = deps.now();
        if (event.$case === 'phoneChangeRequested') {
          const { oldPhone, newPhone } = event.value;
          const decision = decidePhoneChange(
            { oldPhone, newPhone, requestId: metadata.streamId },
            {
              linksOfOld: await linksOfPhone(trx, companyId, oldPhone),
              linksOfNew: await linksOfPhone(trx, companyId, newPhone),
            },
          );
          for (const link of decision.links) await applyClientEvent(trx, companyId, link, at.toISOString());
          await appendToOutbox(trx, [
            ...clientRecords(companyId, record, decision.links, at),
            outcomeRecord(record, decision.outcome, at),
          ]);
        } else {
          const phone = event.value.phoneNumber;
          const account = await loadAccount(trx, companyId);
          const links = await linksOfPhone(trx, companyId, phone);
          const outcome: ClientRequestOutcome = account
            ? checkClient(phone, links, account)
            : { $case: 'clientChecked', value: { phoneNumber: phone, exists: false, bots: [] } };
          await appendToOutbox(trx, [outcomeRecord(record, outcome, at)]);
        }
        return true;
      });
    },
  };
}

export type Links = ReturnType<typeof createLinks>;
