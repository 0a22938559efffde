import type { Knex } from '@mds/db';
import type { ClientEventCase } from '../domain/links.js';

/** A number's subject id in a company (the registry's subject secret; docs/personal-data.md). */
export type SubjectIdOf = (companyId: string, phone: string) => Promise<string>;

/**
 * Which numbers were one person's: change_phone's moves, kept as subject ids (implemented by
 * adapters/db/moves-store.ts). The links use case records them; forgetting follows them.
 */
export interface PersonMoveStore {
  /** Records the moves among the events (their ClientPhoneChanged, opened); the rest are not moves. */
  recordPhoneMoves(
    trx: Knex,
    subjectIdOf: SubjectIdOf,
    companyId: string,
    events: readonly ClientEventCase[],
    at: string,
  ): Promise<void>;
  /** The person's chain: the subject and every subject moves connect to it, either way (the subject first). */
  chainOfSubject(trx: Knex, companyId: string, subjectId: string): Promise<string[]>;
  /** Deletes the moves of these subjects; how many there were. */
  removeMovesOf(trx: Knex, companyId: string, subjectIds: readonly string[]): Promise<number>;
  /** Removes every link of the company whose number is one of these subjects'; how many. */
  removeLinksOfSubjects(
    trx: Knex,
    subjectIdOf: SubjectIdOf,
    companyId: string,
    subjectIds: readonly string[],
  ): Promise<number>;
}
