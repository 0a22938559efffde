import type { Knex, Migration } from '@mds/db';
import type { StreamRecord } from '@mds/contracts';
import { sealOf } from './records.js';

/**
 * Which rows of a service hold a person's data, by subject id: the service's read models keep personal
 * fields opened (their APIs show them), and ClientForgotten names only the subject. One row per (subject,
 * row id); a service writes it beside the rows it derives from sealed events, and reads it on forget.
 */
export const subjectIndexMigration = (name: string): Migration => ({
  name,
  up: async (db) => {
    await db.schema.createTable('personal_data_subjects', (t) => {
      t.uuid('company_id').notNullable();
      t.text('subject_id').notNullable();
      /** What the service's rows of the person are found by (a message id, a webhook id). */
      t.text('row_id').notNullable();
      t.timestamp('recorded_at', { useTz: true }).notNullable().defaultTo(db.fn.now());
      t.primary(['company_id', 'subject_id', 'row_id']);
      t.index(['recorded_at']);
    });
  },
  down: (db) => db.schema.dropTable('personal_data_subjects'),
});

/** Records whose personal data is sealed, as index rows: `rowIdOf` says which row of the service each feeds. */
export function subjectRowsOf(
  records: readonly StreamRecord[],
  rowIdOf: (record: StreamRecord) => string | undefined,
): { company_id: string; subject_id: string; row_id: string }[] {
  const rows = new Map<string, { company_id: string; subject_id: string; row_id: string }>();
  for (const record of records) {
    const sealed = sealOf(record);
    const rowId = sealed && rowIdOf(record);
    if (!sealed || !rowId || !record.metadata) continue;
    const row = { company_id: record.metadata.companyId, subject_id: sealed.subjectId, row_id: rowId };
    rows.set(`${row.company_id}|${row.subject_id}|${row.row_id}`, row);
  }
  return [...rows.values()];
}

export async function rememberSubjects(
  db: Knex,
  rows: readonly { company_id: string; subject_id: string; row_id: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  await db('personal_data_subjects').insert(rows).onConflict(['company_id', 'subject_id', 'row_id']).ignore();
}

/** The ids of a forgotten person's rows; their index rows are deleted with the caller's purge (same trx). */
export async function takeSubjectRows(trx: Knex, companyId: string, subjectId: string): Promise<string[]> {
  const rows = await trx('personal_data_subjects')
    .where({ company_id: companyId, subject_id: subjectId })
    .delete()
    .returning<{ row_id: string }[]>('row_id');
  return rows.map((r) => r.row_id);
}
