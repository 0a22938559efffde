import {
  derivedEventId,
  newEvent,
  topics,
  type BotUpdateEvent,
  type ClientEvent,
  type ClientRequestEvent,
  type Complete,
} from '@mds/contracts';
import { firstSeenOf, type Knex } from '@mds/db';
import type { OutgoingEvent } from '@mds/kafka';
import { inHop, SpanKind } from '@mds/telemetry';
import {
  checkClient,
  decideBotUpdate,
  decidePhoneChange,
  type BotUpdate,
  type ClientEventCase,
  type ClientRequestOutcome,
} from '../domain/links.js';
import type { AccountStore, LinkStore } from './ports.js';
import type { PersonMoveStore, SubjectIdOf } from './person-moves.js';
import { appendToOutbox } from '@mds/outbox';
import { PRODUCER } from './accounts.js';
import { openRecords, sealRecords, type PersonKeyPort } from '@mds/personal-data';

const CONSUMER = 'client-registry.links';

export interface LinksDeps {
  db: Knex;
  accounts: Pick<AccountStore, 'companyOfBot' | 'loadAccount' | 'lockCompanies'>;
  links: LinkStore;
  now: () => Date;
  onCommitted: () => void;
  /** Opens the numbers in what comes in, seals those in what goes out. */
  keys: PersonKeyPort;
  /** change_phone's moves, kept by subject id (application/person-moves.ts). */
  moves: Pick<PersonMoveStore, 'recordPhoneMoves'>;
  subjectId: SubjectIdOf;
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

/**
 * People's actions on bots and the change_phone / client/check requests, decided under their companies'
 * locks, with their effects, their events and their dedupe marks stored together.
 */
export function createLinks(deps: LinksDeps) {
  /** What a person's action on a bot changes: its link events (the company is the bot's, not the update's). */
  async function botUpdateEffects(
    trx: Knex.Transaction,
    companyId: string,
    record: Complete<BotUpdateEvent>,
  ): Promise<OutgoingEvent[]> {
    const update = toBotUpdate(record.event, record.metadata.occurredAt);
    // A number shared by someone forgotten since: erased, it links nothing.
    if (update.kind === 'contactShared' && !update.phone) return [];
    const linksOfPhoneOnBot =
      update.kind === 'contactShared'
        ? (await deps.links.linksOfPhone(trx, companyId, update.phone)).filter(
            (l) => l.chat.botId === update.chat.botId,
          )
        : [];
    const events = decideBotUpdate(update, {
      linksOfChat: await deps.links.linksOfChat(trx, companyId, update.chat.botId, update.chat.chatId),
      linksOfPhoneOnBot,
    });
    // The link events occur when the fact did (a rebuild from them then has the same times).
    const at = update.at ?? deps.now();
    for (const event of events) await deps.links.applyClientEvent(trx, companyId, event, at.toISOString());
    return clientRecords(companyId, record, events, at);
  }

  /** change_phone moves links and answers; client/check only answers. */
  async function clientRequestEffects(
    trx: Knex.Transaction,
    record: Complete<ClientRequestEvent>,
  ): Promise<OutgoingEvent[]> {
    const { event, metadata } = record;
    const companyId = metadata.companyId;
    const at = deps.now();
    if (event.$case === 'phoneChangeRequested') {
      const { oldPhone, newPhone } = event.value;
      const decision = decidePhoneChange(
        { oldPhone, newPhone, requestId: metadata.streamId },
        {
          linksOfOld: await deps.links.linksOfPhone(trx, companyId, oldPhone),
          linksOfNew: await deps.links.linksOfPhone(trx, companyId, newPhone),
        },
      );
      for (const link of decision.links)
        await deps.links.applyClientEvent(trx, companyId, link, at.toISOString());
      await deps.moves.recordPhoneMoves(trx, deps.subjectId, companyId, decision.links, at.toISOString());
      return [
        ...clientRecords(companyId, record, decision.links, at),
        outcomeRecord(record, decision.outcome, at),
      ];
    }
    if (event.$case !== 'clientCheckRequested') return [];
    const phone = event.value.phoneNumber;
    const account = await deps.accounts.loadAccount(trx, companyId);
    const links = await deps.links.linksOfPhone(trx, companyId, phone);
    const outcome: ClientRequestOutcome = account
      ? checkClient(phone, links, account)
      : { $case: 'clientChecked', value: { phoneNumber: phone, exists: false, bots: [] } };
    return [outcomeRecord(record, outcome, at)];
  }

  return {
    /**
     * People's actions on bots and the change_phone / client/check requests one fetch brought, in one
     * transaction: the companies they touch are locked (in one order), each event is decided in turn on the
     * state the ones before it left, and their effects, events and dedupe marks are stored together.
     */
    async handle(input: readonly LinkInput[]): Promise<void> {
      const candidates = input.filter(
        (e) =>
          e.kind === 'botUpdate' ||
          e.record.event.$case === 'phoneChangeRequested' ||
          e.record.event.$case === 'clientCheckRequested',
      );
      if (candidates.length === 0) return;
      const opened = await openRecords(
        deps.keys,
        candidates.map((e) => e.record),
      );
      const relevant = candidates.map((e, i) => ({ ...e, record: opened[i] }) as LinkInput);
      const wrote = await deps.db.transaction(async (trx) => {
        const fresh = await firstSeenOf(
          trx,
          CONSUMER,
          relevant.map((e) => e.record.metadata.eventId),
        );
        const todo = relevant.filter((e) => fresh.delete(e.record.metadata.eventId.toLowerCase()));
        const companyOf = new Map<LinkInput, string>();
        for (const e of todo) {
          const companyId =
            e.kind === 'botUpdate'
              ? await deps.accounts.companyOfBot(trx, botOf(e.record))
              : e.record.metadata.companyId;
          if (companyId) companyOf.set(e, companyId);
        }
        await deps.accounts.lockCompanies(trx, [...companyOf.values()]);
        const outgoing: OutgoingEvent[] = [];
        for (const [e, companyId] of companyOf) {
          outgoing.push(
            ...(e.kind === 'botUpdate'
              ? await botUpdateEffects(trx, companyId, e.record)
              : await inHop(
                  'registry client request',
                  e.record.metadata,
                  () => clientRequestEffects(trx, e.record),
                  {
                    kind: SpanKind.CONSUMER,
                    attributes: { 'mds.request_id': e.record.metadata.streamId },
                  },
                )),
          );
        }
        const records = await sealRecords(
          deps.keys,
          outgoing.map((o) => o.record),
        );
        await appendToOutbox(
          trx,
          outgoing.map((o, i) => ({ ...o, record: records[i]! })),
        );
        return outgoing.length > 0;
      });
      if (wrote) deps.onCommitted();
    },
  };
}

/** An event the links consumer handles, by the stream it came from. */
export type LinkInput =
  | { kind: 'botUpdate'; record: Complete<BotUpdateEvent> }
  | { kind: 'clientRequest'; record: Complete<ClientRequestEvent> };

function botOf(record: Complete<BotUpdateEvent>): string {
  return toBotUpdate(record.event, record.metadata.occurredAt).chat.botId;
}

export type Links = ReturnType<typeof createLinks>;
