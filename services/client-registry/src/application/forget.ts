import { randomUUID } from 'node:crypto';
import { newEvent, topics, type ClientEvent } from '@mds/contracts';
import type { Knex } from '@mds/db';
import { appendToOutbox } from '@mds/outbox';
import type { PersonKeyCache } from '@mds/personal-data';
import type { AccountStore, LinkStore, PersonKeyDestroyer } from './ports.js';
import { PRODUCER } from './accounts.js';

export interface ForgetDeps {
  db: Knex;
  accounts: Pick<AccountStore, 'lockCompanies'>;
  links: Pick<LinkStore, 'removeLinksOfPhone'>;
  destroyPersonKeys: PersonKeyDestroyer;
  subjectId: (companyId: string, phone: string) => Promise<string>;
  /** This replica's key cache: emptied of the person at once (the others on ClientForgotten). */
  keyCache: PersonKeyCache;
  now: () => Date;
  onCommitted: () => void;
}

export interface Forgotten {
  subjectId: string;
  keysDestroyed: number;
  linksRemoved: number;
}

/**
 * Forgets one person of one company (docs/personal-data.md): destroys their keys, so everything sealed
 * under them in the log reads as erased, removes their links, and tells every service (ClientForgotten,
 * which carries the subject id only) to delete what it holds of them. Forgetting someone unknown, or twice,
 * still announces it: a service may hold rows the registry never had.
 */
export function createForgetting(deps: ForgetDeps) {
  return {
    async forget(companyId: string, phone: string): Promise<Forgotten> {
      const subjectId = await deps.subjectId(companyId, phone);
      const result = await deps.db.transaction(async (trx) => {
        await deps.accounts.lockCompanies(trx, [companyId]);
        const keysDestroyed = await deps.destroyPersonKeys(trx, companyId, subjectId);
        const linksRemoved = await deps.links.removeLinksOfPhone(trx, companyId, phone);
        await appendToOutbox(trx, [
          {
            topic: topics.client,
            key: companyId,
            record: newEvent<ClientEvent>({
              eventId: randomUUID(),
              occurredAt: deps.now(),
              companyId,
              streamId: companyId,
              producer: PRODUCER,
              event: { $case: 'clientForgotten', value: { subjectId } },
            }),
          },
        ]);
        return { subjectId, keysDestroyed, linksRemoved };
      });
      deps.keyCache.forgetSubject(companyId, subjectId);
      deps.onCommitted();
      return result;
    },
  };
}

export type Forgetting = ReturnType<typeof createForgetting>;
