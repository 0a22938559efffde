import { signInDelaySeconds } from '../../domain/access.js';
import type { Knex } from '@mds/db';
import type { MemberRow } from '../../application/members.js';
import type { AccessRecords, AccessStore, MemberChanges } from '../../application/ports.js';
import type { Role } from '../../domain/roles.js';

const MEMBER_COLUMNS = [
  'member_id',
  'company_id',
  'email',
  'name',
  'role',
  'created_at',
  'last_sign_in_at',
  'locked_until',
  'password_hash',
];

/** The column of each change to a member (named as MemberRow names them). */
export const MEMBER_CHANGE_COLUMNS = {
  passwordHash: 'password_hash',
  name: 'name',
  role: 'role',
  failedSignIns: 'failed_sign_ins',
  lockedUntil: 'locked_until',
  lastSignInAt: 'last_sign_in_at',
} as const satisfies Record<keyof MemberChanges, string>;

/** Members, sessions, one-time links, sign-in attempts and the audit trail in the dashboard's schema. */
export function createAccessStore(db: Knex): AccessStore {
  return {
    ...accessRecords(db),
    transaction: (work) => db.transaction((trx) => work(accessRecords(trx))),
    withCompanyLock: (companyId, work) =>
      db.transaction(async (trx) => {
        await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`dashboard-members:${companyId}`]);
        return work(accessRecords(trx));
      }),
  };
}

/** The records' operations, run on the database or in one transaction. */
function accessRecords(db: Knex): AccessRecords {
  return { ...memberRecords(db), ...linkRecords(db), ...sessionRecords(db) };
}

function memberRecords(db: Knex) {
  return {
    async insertMember(member) {
      try {
        await db('members').insert({
          member_id: member.memberId,
          company_id: member.companyId,
          email: member.email,
          name: member.name,
          role: member.role,
          invited_by: member.invitedBy,
          created_at: member.createdAt,
        });
        return 'inserted';
      } catch (error) {
        if ((error as { code?: string }).code === '23505') return 'email_taken';
        throw error;
      }
    },

    async memberForLink(companyId, by) {
      const row = await db('members')
        .where({ company_id: companyId })
        .modify((q) => {
          if ('memberId' in by) q.where('member_id', by.memberId);
          else q.where('email', by.email);
        })
        .first<{ member_id: string; email: string; role: Role; password_hash: string | null } | undefined>(
          'member_id',
          'email',
          'role',
          'password_hash',
        );
      return (
        row && {
          memberId: row.member_id,
          email: row.email,
          role: row.role,
          hasPassword: Boolean(row.password_hash),
        }
      );
    },

    memberById: (memberId) =>
      db('members').where('member_id', memberId).first<MemberRow | undefined>(MEMBER_COLUMNS),

    memberByEmail: (email) =>
      db('members')
        .where({ email })
        .first<(MemberRow & { failed_sign_ins: number }) | undefined>([...MEMBER_COLUMNS, 'failed_sign_ins']),

    membersOf: (companyId) =>
      db('members').where('company_id', companyId).orderBy('created_at').select<MemberRow[]>(MEMBER_COLUMNS),

    async roleOf(companyId, memberId) {
      const member = await db('members')
        .where({ company_id: companyId, member_id: memberId })
        .first<{ role: Role } | undefined>('role');
      return member?.role;
    },

    async ownerCount(companyId) {
      const owners = await db('members')
        .where({ company_id: companyId, role: 'owner' })
        .count<{ n: string }[]>({ n: '*' });
      return Number(owners[0]!.n);
    },

    async updateMember(memberId, changes) {
      const columns: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(changes))
        if (value !== undefined) columns[MEMBER_CHANGE_COLUMNS[key as keyof MemberChanges]] = value;
      const [row] = await db('members')
        .where('member_id', memberId)
        .update(columns)
        .returning<MemberRow[]>(MEMBER_COLUMNS);
      return row!;
    },

    async deleteMember(memberId) {
      await db('members').where('member_id', memberId).delete();
    },

    async appendAudit(entry) {
      await db('audit_log').insert({
        company_id: entry.companyId,
        member_id: entry.memberId,
        action: entry.action,
        target: entry.target,
        detail: entry.detail === undefined ? null : JSON.stringify(entry.detail),
        at: entry.at,
      });
    },

    async keyCreators(companyId) {
      const rows = await db('audit_log as a')
        .leftJoin('members as m', 'm.member_id', 'a.member_id')
        .where({ 'a.company_id': companyId, 'a.action': 'api_key.created' })
        .select<{ target: string; email: string | null; name: string | null }[]>(
          'a.target',
          'm.email',
          'm.name',
        );
      return new Map(rows.map((r) => [r.target, { email: r.email ?? '', name: r.name ?? '' }]));
    },
  } satisfies Partial<AccessRecords>;
}

function linkRecords(db: Knex) {
  return {
    async dropUnusedLinks(memberId) {
      await db('one_time_links').where({ member_id: memberId }).whereNull('used_at').delete();
    },

    async insertLink(link) {
      await db('one_time_links').insert({
        token_hash: link.tokenHash,
        member_id: link.memberId,
        purpose: link.purpose,
        created_at: link.createdAt,
        expires_at: link.expiresAt,
      });
    },

    liveLink: (tokenHash, now) =>
      db('one_time_links as l')
        .join('members as m', 'm.member_id', 'l.member_id')
        .where('l.token_hash', tokenHash)
        .whereNull('l.used_at')
        .andWhere('l.expires_at', '>', now)
        .first<{ purpose: string; email: string; name: string } | undefined>(
          'l.purpose',
          'm.email',
          'm.name',
        ),

    async takeLiveLink(tokenHash, now) {
      const link = await db('one_time_links')
        .where('token_hash', tokenHash)
        .whereNull('used_at')
        .andWhere('expires_at', '>', now)
        .forUpdate()
        .first<{ member_id: string } | undefined>('member_id');
      return link && { memberId: link.member_id };
    },

    async markLinkUsed(tokenHash, at) {
      await db('one_time_links').where('token_hash', tokenHash).update({ used_at: at });
    },

    async deleteLinksExpiredBefore(at) {
      await db('one_time_links').where('expires_at', '<=', at).delete();
    },

    async recordSignInAttempt(address, at) {
      await db('sign_in_attempts').insert({ address, at });
    },

    async attemptsSince(address, since) {
      const [window] = await db('sign_in_attempts')
        .where('address', address)
        .andWhere('at', '>', since)
        .select<{ attempts: number; oldest: Date }[]>(
          db.raw('count(*)::int as attempts'),
          db.raw('min(at) as oldest'),
        );
      return window!;
    },

    async deleteSignInAttemptsBefore(at) {
      await db('sign_in_attempts').where('at', '<', at).delete();
      // An email's failures are forgotten a day after its last attempt.
      await db('sign_in_throttle')
        .where('updated_at', '<', new Date(at.getTime() - 86_400_000))
        .delete();
    },

    async claimSignInAttempt(key, now, throttle) {
      // One statement: the row's lock orders parallel attempts, each counting (or finding it must wait) in turn.
      const { rows } = await db.raw<{ rows: { failures: number }[] }>(
        `insert into sign_in_throttle as t (key, failures, next_attempt_at, updated_at)
         values (:key, 1, :now::timestamptz + make_interval(secs => :first), :now)
         on conflict (key) do update set
           failures = t.failures + 1,
           next_attempt_at = :now::timestamptz + make_interval(secs =>
             case when t.failures + 1 < :free then 0
                  else least(:max, power(2, least(30, t.failures + 1 - :free))) end),
           updated_at = :now
         where t.next_attempt_at <= :now
         returning failures`,
        {
          key,
          now,
          first: signInDelaySeconds(1, throttle),
          free: throttle.freeFailures,
          max: throttle.maxDelaySeconds,
        },
      );
      if (rows.length > 0) return { allowed: true };
      const row = await db('sign_in_throttle')
        .where({ key })
        .first<{ next_attempt_at: Date } | undefined>('next_attempt_at');
      const wait = row ? row.next_attempt_at.getTime() - now.getTime() : 1_000;
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(wait / 1000)) };
    },

    async clearSignInFailures(key) {
      await db('sign_in_throttle').where({ key }).delete();
    },
  } satisfies Partial<AccessRecords>;
}

function sessionRecords(db: Knex) {
  return {
    async createSession(session) {
      await db('sessions').insert({
        session_hash: session.sessionHash,
        member_id: session.memberId,
        csrf_token: session.csrf,
        created_at: session.createdAt,
        last_seen_at: session.lastSeenAt,
        expires_at: session.expiresAt,
      });
    },

    async sessionOf(sessionHash, now) {
      const row = await db('sessions as s')
        .join('members as m', 'm.member_id', 's.member_id')
        .where('s.session_hash', sessionHash)
        .andWhere('s.expires_at', '>', now)
        .first<
          (MemberRow & { csrf_token: string; session_created_at: Date; last_seen_at: Date }) | undefined
        >([
          ...MEMBER_COLUMNS.map((c) => `m.${c}`),
          's.csrf_token',
          's.created_at as session_created_at',
          's.last_seen_at',
        ]);
      if (!row) return undefined;
      const { csrf_token, session_created_at, last_seen_at, ...member } = row;
      return { member, csrf: csrf_token, createdAt: session_created_at, lastSeenAt: last_seen_at };
    },

    async extendSession(sessionHash, lastSeenAt, expiresAt) {
      await db('sessions')
        .where('session_hash', sessionHash)
        .update({ last_seen_at: lastSeenAt, expires_at: expiresAt });
    },

    endSession: (sessionHash) => db('sessions').where('session_hash', sessionHash).delete(),

    async endSessionsOf(memberId) {
      await db('sessions').where('member_id', memberId).delete();
    },

    async deleteSessionsExpiredBy(now) {
      await db('sessions').where('expires_at', '<=', now).delete();
    },
  } satisfies Partial<AccessRecords>;
}
