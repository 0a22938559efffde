import type { Knex } from '@mds/db';
import { outliving, takeSubjectRows, type RetentionRule } from '@mds/personal-data';

/**
 * Deletes what the dispatcher holds of a forgotten person: the number in the bodies of their notifications
 * (client.check), pending or sent, and the excerpts of the answers to them (an endpoint may echo the body).
 * A pending notification is still delivered, without the number.
 */
export async function forgetInDeliveries(db: Knex, companyId: string, subjectId: string): Promise<void> {
  await db.transaction(async (trx) => {
    const sourceEventIds = await takeSubjectRows(trx, companyId, subjectId);
    if (sourceEventIds.length === 0) return;
    await trx.raw(
      `update deliveries set
         body = case when jsonb_exists(body::jsonb, 'phone_number')
                     then jsonb_set(body::jsonb, '{phone_number}', '""')::text else body end,
         attempt_log = coalesce(
           (select jsonb_agg(e || '{"response_excerpt": ""}'::jsonb) from jsonb_array_elements(attempt_log) e),
           '[]'::jsonb)
       where source_event_id = any(?::uuid[])`,
      [sourceEventIds],
    );
  });
}

/** What ages out: finished notifications (pending ones never), and their subject index a week later. */
export function retentionRules(deliveryDays: number): RetentionRule[] {
  return [
    { table: 'deliveries', column: 'finished_at', days: deliveryDays, onlyWhere: `status <> 'pending'` },
    { table: 'personal_data_subjects', column: 'recorded_at', days: outliving(deliveryDays) },
  ];
}
