import type { Knex } from '@mds/db';

/** Who a row of the audit trail names: a member (as they are now), or nobody (the operator, a removed member). */
export interface AuditPerson {
  member_id: string;
  email: string;
  name: string;
}

/** One thing a member (or the operator) did, as the owner reads it. */
export interface AuditEntryView {
  id: string;
  at: string;
  action: string;
  /** Who did it: null for the operator; a removed member keeps their id with no email. */
  actor: AuditPerson | null;
  /** What it was done to: an event id, a key, bot, endpoint or member id, or empty. */
  target: string;
  /** The member it was done to, for member actions. */
  target_member: AuditPerson | null;
  detail: unknown;
}

interface Row {
  id: string;
  at: Date;
  action: string;
  target: string;
  detail: unknown;
  member_id: string | null;
  email: string | null;
  name: string | null;
  target_member_id: string | null;
  target_email: string | null;
  target_name: string | null;
}

const person = (id: string | null, email: string | null, name: string | null): AuditPerson | null =>
  id ? { member_id: id, email: email ?? '', name: name ?? '' } : null;

/**
 * The company's audit trail, newest first, `limit` rows after the row `before` (an id of a previous page's last
 * row): keyset paging on the id, which grows with time (index audit_log_by_company).
 */
export async function auditTrail(
  db: Knex,
  companyId: string,
  page: { before?: string | undefined; limit: number },
): Promise<{ entries: AuditEntryView[]; nextCursor: string | null }> {
  const rows = await db('audit_log as a')
    .leftJoin('members as m', 'm.member_id', 'a.member_id')
    // A member action's target is the member's id (text): who it was done to, as they are now.
    .leftJoin('members as t', (join) => {
      join.on(db.raw("a.action like 'member.%' and t.member_id::text = a.target"));
    })
    .where('a.company_id', companyId)
    .modify((q) => {
      if (page.before) q.where('a.id', '<', page.before);
    })
    .orderBy('a.id', 'desc')
    .limit(page.limit + 1)
    .select<Row[]>(
      db.raw('a.id::text as id'),
      'a.at',
      'a.action',
      'a.target',
      'a.detail',
      'a.member_id',
      'm.email',
      'm.name',
      't.member_id as target_member_id',
      't.email as target_email',
      't.name as target_name',
    );
  const more = rows.length > page.limit;
  const shown = more ? rows.slice(0, page.limit) : rows;
  return {
    entries: shown.map((r) => ({
      id: r.id,
      at: r.at.toISOString(),
      action: r.action,
      actor: person(r.member_id, r.email, r.name),
      target: r.target,
      target_member: person(r.target_member_id, r.target_email, r.target_name),
      detail: r.detail ?? null,
    })),
    nextCursor: more ? shown[shown.length - 1]!.id : null,
  };
}
