import { randomUUID } from 'node:crypto';
import { newEvent, topics, type ClientEvent } from '@mds/contracts';
import type { Knex } from '@mds/db';
import { appendToOutbox } from '@mds/outbox';
import type { PersonKeyCache } from '@mds/personal-data';
import type { AccountStore, LinkStore, PersonKeyDestroyer } from './ports.js';
import type { PersonMoveStore } from './person-moves.js';
import { PRODUCER } from './accounts.js';

export interface ForgetDeps {
  db: Knex;
  accounts: Pick<AccountStore, 'lockCompanies'>;
  links: Pick<LinkStore, 'removeLinksOfPhone'>;
  destroyPersonKeys: PersonKeyDestroyer;
  subjectId: (companyId: string, phone: string) => Promise<string>;
  /** change_phone's moves: the person's other numbers. */
  moves: PersonMoveStore;
  /** This replica's key cache: emptied of the person at once (the others on ClientForgotten). */
  keyCache: PersonKeyCache;
  now: () => Date;
  onCommitted: () => void;
}

export interface Forgotten {
  /** The subject of the number the operator gave. */
  subjectId: string;
  /** Every subject of the person forgotten: that number's and those moves connect to it (first: its own). */
  subjectIds: string[];
  keysDestroyed: number;
  linksRemoved: number;
}

/**
 * Forgets one person of one company (docs/personal-data.md): every number they had, followed through their
 * change_phone moves either way from the one given, so any of them forgets all. Destroys each number's keys,
 * so everything sealed under them in the log reads as erased; removes their links and their moves; and
 * tells every service, once per subject (ClientForgotten carries the subject id only), to delete what it
 * holds of them. Forgetting someone unknown, or twice, still announces it: a service may hold rows the
 * registry never had.
 */
export function createForgetting(deps: ForgetDeps) {
  return {
    async forget(companyId: string, phone: string): Promise<Forgotten> {
      const subjectId = await deps.subjectId(companyId, phone);
      const result = await deps.db.transaction(async (trx) => {
        await deps.accounts.lockCompanies(trx, [companyId]);
        const subjectIds = await deps.moves.chainOfSubject(trx, companyId, subjectId);
        let keysDestroyed = 0;
        for (const subject of subjectIds)
          keysDestroyed += await deps.destroyPersonKeys(trx, companyId, subject);
        let linksRemoved = await deps.links.removeLinksOfPhone(trx, companyId, phone);
        if (subjectIds.length > 1) {
          linksRemoved += await deps.moves.removeLinksOfSubjects(
            trx,
            deps.subjectId,
            companyId,
            subjectIds.slice(1),
          );
          await deps.moves.removeMovesOf(trx, companyId, subjectIds);
        }
        await appendToOutbox(
          trx,
          subjectIds.map((subject) => ({
            topic: topics.client,
            key: companyId,
            record: newEvent<ClientEvent>({
              eventId: randomUUID(),
              occurredAt: deps.now(),
              companyId,
              streamId: companyId,
              producer: PRODUCER,
              event: { $case: 'clientForgotten', value: { subjectId: subject } },
            }),
          })),
        );
        return { subjectId, subjectIds, keysDestroyed, linksRemoved };
      });
      for (const subject of result.subjectIds) deps.keyCache.forgetSubject(companyId, subject);
      deps.onCommitted();
      return result;
    },
  };
}

export type Forgetting = ReturnType<typeof createForgetting>;
