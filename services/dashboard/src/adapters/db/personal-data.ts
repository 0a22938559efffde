import type { Knex } from '@mds/db';
import { takeSubjectRows } from '@mds/personal-data';

/**
 * Deletes what the dashboard holds of a forgotten person: the number on their messages' rows, and the
 * number, text and buttons in their timelines' entries (marked `erased`). Found through the subject index.
 */
export async function forgetInReadModels(db: Knex, companyId: string, subjectId: string): Promise<void> {
  await db.transaction(async (trx) => {
    const ids = await takeSubjectRows(trx, companyId, subjectId);
    if (ids.length === 0) return;
    await trx('messages').whereIn('message_id', ids).update({ phone: null });
    await trx.raw(
      `update timeline set data = (data - 'phone_number' - 'text' - 'buttons') || '{"erased": true}'::jsonb
       where subject_id = any(?::text[]) and jsonb_exists_any(data, array['phone_number', 'text', 'buttons'])`,
      [ids],
    );
  });
}
