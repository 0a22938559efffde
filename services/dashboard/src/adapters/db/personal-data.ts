import type { Knex } from '@mds/db';
import { takeSubjectRows, type RetentionRule } from '@mds/personal-data';

/**
 * The keys of a timeline entry's data that hold personal data (change_phone's entries: both numbers; a webhook
 * attempt's answer excerpt, which a replica of an older build may still have written).
 */
const PERSONAL_KEYS = [
  'phone_number',
  'text',
  'buttons',
  'old_phone',
  'new_phone',
  'response_excerpt',
  'metadata',
];

/**
 * Deletes what the dashboard holds of a forgotten person: the number and text on their messages' rows, and the
 * number, text, buttons and request metadata (change_phone's: both numbers) in their timelines' entries (marked `erased`).
 * Found through the subject index.
 */
export async function forgetInReadModels(db: Knex, companyId: string, subjectId: string): Promise<void> {
  await db.transaction(async (trx) => {
    const ids = await takeSubjectRows(trx, companyId, subjectId);
    if (ids.length === 0) return;
    await trx('messages').whereIn('message_id', ids).update({ phone: null, text: null });
    await trx.raw(
      `update timeline set data = (data - ?::text[]) || '{"erased": true}'::jsonb
       where subject_id = any(?::text[]) and jsonb_exists_any(data, ?::text[])`,
      [PERSONAL_KEYS, ids, PERSONAL_KEYS],
    );
  });
}

/**
 * The audit log's retention: what members did ages out after `days`, except who made each API key, which the
 * keys page shows for as long as the key is listed.
 */
export function auditLogRetention(days: number): RetentionRule[] {
  return [{ table: 'audit_log', column: 'at', days, onlyWhere: `action <> 'api_key.created'` }];
}
