import type { Knex } from '@mds/db';
import { outliving, takeSubjectRows, type RetentionRule } from '@mds/personal-data';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Deletes what the dispatcher holds of a forgotten person: the numbers in the bodies of their notifications
 * (client.check's `phone_number`, client.phone_changed's `old_phone` and `new_phone`) and the `metadata` every body
 * of their requests echoes (emptied to `{}`), pending or sent, the metadata kept for notifications to come, and the
 * excerpts of the answers to every notification about their messages and requests (an endpoint may echo the
 * body, or anything). A pending notification is still delivered, without the number. The subject index names
 * the messages and requests (a delivery's `subject_id`); rows indexed before it did name source events.
 */
export async function forgetInDeliveries(db: Knex, companyId: string, subjectId: string): Promise<void> {
  await db.transaction(async (trx) => {
    const ids = await takeSubjectRows(trx, companyId, subjectId);
    if (ids.length === 0) return;
    await trx('request_metadata')
      .where({ company_id: companyId })
      .whereIn(
        'request_id',
        ids.filter((id) => UUID.test(id)),
      )
      .delete();
    await trx.raw(
      `update deliveries set
         body = case when jsonb_exists_any(body::jsonb, array['phone_number', 'old_phone', 'new_phone', 'metadata'])
                     then (select jsonb_object_agg(k, case when k in ('phone_number', 'old_phone', 'new_phone')
                                                          then '""'::jsonb
                                                          when k = 'metadata' then '{}'::jsonb else v end)
                           from jsonb_each(body::jsonb) as f(k, v))::text
                     else body end,
         attempt_log = coalesce(
           (select jsonb_agg(e || '{"response_excerpt": ""}'::jsonb) from jsonb_array_elements(attempt_log) e),
           '[]'::jsonb)
       where company_id = ? and (subject_id = any(?::text[]) or source_event_id = any(?::uuid[]))`,
      [companyId, ids, ids.filter((id) => UUID.test(id))],
    );
  });
}

/** What ages out: finished notifications (pending ones never), and their subject index a week later. */
export function retentionRules(deliveryDays: number): RetentionRule[] {
  return [
    { table: 'deliveries', column: 'finished_at', days: deliveryDays, onlyWhere: `status <> 'pending'` },
    { table: 'personal_data_subjects', column: 'recorded_at', days: outliving(deliveryDays) },
    { table: 'request_metadata', column: 'recorded_at', days: outliving(deliveryDays) },
  ];
}
