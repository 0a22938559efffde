import type { Knex } from '@mds/db';
import { takeSubjectRows } from '@mds/personal-data';

/**
 * Deletes what the read model holds of a forgotten person: the number in their client checks' results
 * (messages keep no number nor text in the read model). Rows are found through the subject index.
 */
export async function forgetInEventStates(db: Knex, companyId: string, subjectId: string): Promise<void> {
  await db.transaction(async (trx) => {
    const ids = await takeSubjectRows(trx, companyId, subjectId);
    if (ids.length === 0) return;
    await trx('event_states')
      .whereIn('event_id', ids)
      .whereRaw(`jsonb_exists(result, 'phoneNumber')`)
      .update({ result: trx.raw(`jsonb_set(result, '{phoneNumber}', '""')`) });
  });
}
