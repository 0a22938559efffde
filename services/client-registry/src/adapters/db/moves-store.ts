import type { Knex } from '@mds/db';
import type { ClientEventCase } from '../../domain/links.js';
import type { PersonMoveStore, SubjectIdOf } from '../../application/person-moves.js';

/**
 * Which numbers were one person's (docs/personal-data.md): each accepted change_phone is a move from the old
 * number's subject to the new one's, kept as subject ids only (never a number). A person's chain is every
 * subject moves connect to theirs, in either direction; forgetting any number of it forgets all of them.
 * The table is state like the links: written with the ClientPhoneChanged that moves them, and rebuilt from
 * those events (which open only while the old number's key exists, so a forgotten chain is never restored).
 */

/** Records the moves among the events (their ClientPhoneChanged, opened); the rest are not moves. */
export async function recordPhoneMoves(
  trx: Knex,
  subjectIdOf: SubjectIdOf,
  companyId: string,
  events: readonly ClientEventCase[],
  at: string,
): Promise<void> {
  for (const event of events) {
    if (event.$case !== 'clientPhoneChanged') continue;
    const { oldPhone, newPhone } = event.value;
    // Erased (the person was forgotten since): a rebuild restores no move of theirs.
    if (!oldPhone || !newPhone) continue;
    await trx('person_moves')
      .insert({
        company_id: companyId,
        from_subject_id: await subjectIdOf(companyId, oldPhone),
        to_subject_id: await subjectIdOf(companyId, newPhone),
        moved_at: at,
      })
      .onConflict(['company_id', 'from_subject_id', 'to_subject_id'])
      .ignore();
  }
}

/** The person's chain: the subject and every subject moves connect to it, either way (the subject first). */
export async function chainOfSubject(trx: Knex, companyId: string, subjectId: string): Promise<string[]> {
  const { rows } = await trx.raw<{ rows: { subject_id: string }[] }>(
    `with recursive chain(subject_id) as (
       select ?::text
       union
       select case when m.from_subject_id = chain.subject_id then m.to_subject_id else m.from_subject_id end
       from person_moves m join chain
         on m.company_id = ? and (m.from_subject_id = chain.subject_id or m.to_subject_id = chain.subject_id)
     )
     select subject_id from chain`,
    [subjectId, companyId],
  );
  return [subjectId, ...rows.map((r) => r.subject_id).filter((s) => s !== subjectId)];
}

/** Deletes the moves of these subjects: a forgotten chain is no one's any more. How many there were. */
export async function removeMovesOf(
  trx: Knex,
  companyId: string,
  subjectIds: readonly string[],
): Promise<number> {
  return trx('person_moves')
    .where({ company_id: companyId })
    .andWhere((q) => q.whereIn('from_subject_id', subjectIds).orWhereIn('to_subject_id', subjectIds))
    .delete();
}

/**
 * Removes every link of the company whose number is one of these subjects'. Links name numbers and the chain
 * names subjects, so each distinct linked number of the company is turned into its subject id (one HMAC
 * each, under the company's lock): the cost of an erasure across moves, paid only when there were moves.
 * How many links were removed.
 */
export async function removeLinksOfSubjects(
  trx: Knex,
  subjectIdOf: SubjectIdOf,
  companyId: string,
  subjectIds: readonly string[],
): Promise<number> {
  const wanted = new Set(subjectIds);
  const linked = await trx('client_links')
    .where({ company_id: companyId })
    .distinct<{ phone: string }[]>('phone');
  const phones: string[] = [];
  for (const { phone } of linked) if (wanted.has(await subjectIdOf(companyId, phone))) phones.push(phone);
  if (phones.length === 0) return 0;
  return trx('client_links').where({ company_id: companyId }).whereIn('phone', phones).delete();
}

/** The move store the application uses (application/person-moves.ts). */
export const personMoveStore: PersonMoveStore = {
  recordPhoneMoves,
  chainOfSubject,
  removeMovesOf,
  removeLinksOfSubjects,
};
