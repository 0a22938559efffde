import { randomUUID } from 'node:crypto';
import type { Knex } from '@mds/db';
import { decoyHash, hashPassword, newToken, tokenHash, verifyPassword } from './passwords.js';
import { afterFailure, normalizeEmail, passwordProblem, sessionExpiry } from '../domain/access.js';
import type { Role } from '../domain/roles.js';
import {
  AccessError,
  MEMBER_COLUMNS,
  toMember,
  type AccessPolicy,
  type Member,
  type MemberRow,
} from './members.js';

export { AccessError, type AccessPolicy, type Member } from './members.js';

export interface AccessDeps {
  db: Knex;
  policy: AccessPolicy;
  now: () => Date;
}

/** Invitations and password resets: one-time links, and the password they set. */
function linkAccess(o: AccessDeps) {
  const { db, policy } = o;
  async function linkFor(trx: Knex, memberId: string, purpose: 'invite' | 'reset') {
    const token = newToken();
    const now = o.now();
    const expiresAt = new Date(now.getTime() + policy.linkHours * 3_600_000);
    // A new link replaces the member's unused ones.
    await trx('one_time_links').where({ member_id: memberId }).whereNull('used_at').delete();
    await trx('one_time_links').insert({
      token_hash: tokenHash(token),
      member_id: memberId,
      purpose,
      created_at: now,
      expires_at: expiresAt,
    });
    return { token, expiresAt };
  }

  return {
    /** A new member with no password yet, and the one-time link that lets them set one. */
    async invite(input: {
      companyId: string;
      email: string;
      name?: string;
      role: Role;
      invitedBy: string | null;
    }) {
      const email = normalizeEmail(input.email);
      return db.transaction(async (trx) => {
        const memberId = randomUUID();
        try {
          await trx('members').insert({
            member_id: memberId,
            company_id: input.companyId,
            email,
            name: input.name?.trim() ?? '',
            role: input.role,
            invited_by: input.invitedBy,
            created_at: o.now(),
          });
        } catch (error) {
          if ((error as { code?: string }).code === '23505')
            throw new AccessError('email_taken', `${email} is already a member of a company.`);
          throw error;
        }
        const link = await linkFor(trx, memberId, 'invite');
        return { memberId, email, ...link };
      });
    },

    /** A one-time link for a member of the company to set a new password. */
    async resetLink(companyId: string, member: { memberId?: string; email?: string }) {
      const row = await db('members')
        .where({ company_id: companyId })
        .modify((q) => {
          if (member.memberId) q.where('member_id', member.memberId);
          else q.where('email', normalizeEmail(member.email ?? ''));
        })
        .first<{ member_id: string; email: string; password_hash: string | null } | undefined>(
          'member_id',
          'email',
          'password_hash',
        );
      if (!row) throw new AccessError('member_not_found', 'No such member in this company.');
      const link = await linkFor(db, row.member_id, row.password_hash ? 'reset' : 'invite');
      return { memberId: row.member_id, email: row.email, ...link };
    },

    /** What a one-time link is for, while it works. */
    async peekLink(token: string) {
      const row = await db('one_time_links as l')
        .join('members as m', 'm.member_id', 'l.member_id')
        .where('l.token_hash', tokenHash(token))
        .whereNull('l.used_at')
        .andWhere('l.expires_at', '>', o.now())
        .first<{ purpose: string; email: string; name: string } | undefined>(
          'l.purpose',
          'm.email',
          'm.name',
        );
      if (!row)
        throw new AccessError('link_invalid', 'This link has been used or has expired; ask for a new one.');
      return row;
    },

    /** Sets the password through a one-time link; ends every other session of the member; answers the member. */
    async setPassword(token: string, password: string, name?: string): Promise<Member> {
      return db.transaction(async (trx) => {
        const link = await trx('one_time_links')
          .where('token_hash', tokenHash(token))
          .whereNull('used_at')
          .andWhere('expires_at', '>', o.now())
          .forUpdate()
          .first<{ member_id: string } | undefined>('member_id');
        if (!link)
          throw new AccessError('link_invalid', 'This link has been used or has expired; ask for a new one.');
        const member = await trx('members')
          .where('member_id', link.member_id)
          .first<MemberRow>(MEMBER_COLUMNS);
        const problem = passwordProblem(password, member.email);
        if (problem) throw new AccessError('weak_password', problem);
        await trx('one_time_links').where('token_hash', tokenHash(token)).update({ used_at: o.now() });
        await trx('sessions').where('member_id', link.member_id).delete();
        const [updated] = await trx('members')
          .where('member_id', link.member_id)
          .update({
            password_hash: await hashPassword(password),
            failed_sign_ins: 0,
            locked_until: null,
            ...(name?.trim() ? { name: name.trim() } : {}),
          })
          .returning<MemberRow[]>(MEMBER_COLUMNS);
        return toMember(updated!);
      });
    },
  };
}

/** Signing in: email and password, throttled per address and locked per member. */
function signInAccess(o: AccessDeps) {
  const { db, policy } = o;
  async function throttleAddress(address: string): Promise<void> {
    const now = o.now();
    const windowStart = new Date(now.getTime() - 60_000);
    await db('sign_in_attempts').insert({ address, at: now });
    const [window] = await db('sign_in_attempts')
      .where('address', address)
      .andWhere('at', '>', windowStart)
      .select<
        {
          attempts: number;
          oldest: Date;
        }[]
      >(db.raw('count(*)::int as attempts'), db.raw('min(at) as oldest'));
    if (window!.attempts > policy.signInsPerAddressPerMinute) {
      throw new AccessError(
        'too_many_attempts',
        'Too many sign-in attempts from this address; wait a minute.',
        Math.max(1, Math.ceil((window!.oldest.getTime() + 60_000 - now.getTime()) / 1000)),
      );
    }
  }

  return {
    /**
     * Checks email and password, with a per-address limit and a per-member lockout; the same answer and
     * about the same time for an unknown email as for a wrong password.
     */
    async signIn(emailInput: string, password: string, address: string): Promise<Member> {
      await throttleAddress(address);
      const email = normalizeEmail(emailInput);
      const row = await db('members')
        .where({ email })
        .first<(MemberRow & { failed_sign_ins: number }) | undefined>([...MEMBER_COLUMNS, 'failed_sign_ins']);
      const now = o.now();
      if (row?.locked_until && row.locked_until > now) {
        throw new AccessError(
          'account_locked',
          'Too many failed sign-ins: this account is locked for a while. An owner or the operator can send a reset link.',
          Math.ceil((row.locked_until.getTime() - now.getTime()) / 1000),
        );
      }
      const ok = await verifyPassword(password, row?.password_hash ?? (await decoyHash()));
      if (!row || !row.password_hash || !ok) {
        if (row) {
          const next = afterFailure(row.failed_sign_ins, now, policy);
          await db('members')
            .where('member_id', row.member_id)
            .update({
              failed_sign_ins: next.failures,
              ...(next.lockedUntil ? { locked_until: next.lockedUntil } : {}),
            });
        }
        throw new AccessError('invalid_credentials', 'Wrong email or password.');
      }
      const [updated] = await db('members')
        .where('member_id', row.member_id)
        .update({ failed_sign_ins: 0, locked_until: null, last_sign_in_at: now })
        .returning<MemberRow[]>(MEMBER_COLUMNS);
      return toMember(updated!);
    },
  };
}

/** Sessions: started on sign-in, extended by use, swept when over. */
function sessionAccess(o: AccessDeps) {
  const { db, policy } = o;

  return {
    /** A new session: the cookie's value (shown once) and its CSRF token. */
    async startSession(memberId: string) {
      const token = newToken();
      const csrf = newToken();
      const now = o.now();
      await db('sessions').insert({
        session_hash: tokenHash(token),
        member_id: memberId,
        csrf_token: csrf,
        created_at: now,
        last_seen_at: now,
        expires_at: sessionExpiry(now, now, policy.sessionIdleMinutes, policy.sessionMaxHours),
      });
      return { token, csrf };
    },

    /** The session of a cookie and its member, extended by this use; undefined when over or unknown. */
    async session(token: string): Promise<{ member: Member; csrf: string } | undefined> {
      const now = o.now();
      const row = await db('sessions as s')
        .join('members as m', 'm.member_id', 's.member_id')
        .where('s.session_hash', tokenHash(token))
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
      // Written at most once a minute per session: reading pages costs no write each time.
      if (now.getTime() - last_seen_at.getTime() > 60_000) {
        await db('sessions')
          .where('session_hash', tokenHash(token))
          .update({
            last_seen_at: now,
            expires_at: sessionExpiry(
              session_created_at,
              now,
              policy.sessionIdleMinutes,
              policy.sessionMaxHours,
            ),
          });
      }
      return { member: toMember(member), csrf: csrf_token };
    },

    /** Forgets what is over: expired sessions and links, sign-in windows older than an hour. */
    async sweep(): Promise<void> {
      const now = o.now();
      await db('sessions').where('expires_at', '<=', now).delete();
      await db('one_time_links')
        .where('expires_at', '<=', new Date(now.getTime() - 86_400_000))
        .delete();
      await db('sign_in_attempts')
        .where('at', '<', new Date(now.getTime() - 3_600_000))
        .delete();
    },

    endSession: (token: string) => db('sessions').where('session_hash', tokenHash(token)).delete(),
  };
}

/** A company's members, their roles, and the audit trail of what they did. */
function memberAccess(o: AccessDeps) {
  const { db } = o;
  async function keepAnOwner(trx: Knex.Transaction, companyId: string) {
    const owners = await trx('members')
      .where({ company_id: companyId, role: 'owner' })
      .count<{ n: string }[]>({ n: '*' });
    if (Number(owners[0]!.n) <= 1)
      throw new AccessError(
        'last_owner',
        'The company must keep at least one owner: make someone else owner first.',
      );
  }

  return {
    async members(companyId: string): Promise<Member[]> {
      const rows = await db('members')
        .where('company_id', companyId)
        .orderBy('created_at')
        .select<MemberRow[]>(MEMBER_COLUMNS);
      return rows.map(toMember);
    },

    /** Changes a member's role; the company always keeps an owner. */
    async setRole(companyId: string, memberId: string, role: Role): Promise<Member> {
      return db.transaction(async (trx) => {
        await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`dashboard-members:${companyId}`]);
        const member = await trx('members')
          .where({ company_id: companyId, member_id: memberId })
          .first<{ role: Role } | undefined>('role');
        if (!member) throw new AccessError('member_not_found', 'No such member in this company.');
        if (member.role === 'owner' && role !== 'owner') await keepAnOwner(trx, companyId);
        const [row] = await trx('members')
          .where('member_id', memberId)
          .update({ role })
          .returning<MemberRow[]>(MEMBER_COLUMNS);
        // A changed role takes effect on the next request: sessions read the member each time.
        return toMember(row!);
      });
    },

    /** Removes a member and ends their sessions; the company always keeps an owner. */
    async remove(companyId: string, memberId: string): Promise<void> {
      await db.transaction(async (trx) => {
        await trx.raw('select pg_advisory_xact_lock(hashtext(?))', [`dashboard-members:${companyId}`]);
        const member = await trx('members')
          .where({ company_id: companyId, member_id: memberId })
          .first<{ role: Role } | undefined>('role');
        if (!member) throw new AccessError('member_not_found', 'No such member in this company.');
        if (member.role === 'owner') await keepAnOwner(trx, companyId);
        await trx('members').where('member_id', memberId).delete();
      });
    },

    async audit(entry: {
      companyId: string;
      memberId: string | null;
      action: string;
      target?: string;
      detail?: unknown;
    }) {
      await db('audit_log').insert({
        company_id: entry.companyId,
        member_id: entry.memberId,
        action: entry.action,
        target: entry.target ?? '',
        detail: entry.detail === undefined ? null : JSON.stringify(entry.detail),
        at: o.now(),
      });
    },

    /** Who made each of the company's keys through the dashboard (by key id). */
    async keyCreators(companyId: string): Promise<Map<string, { email: string; name: string }>> {
      const rows = await db('audit_log as a')
        .leftJoin('members as m', 'm.member_id', 'a.member_id')
        .where({ 'a.company_id': companyId, 'a.action': 'api_key.created' })
        .select<
          {
            target: string;
            email: string | null;
            name: string | null;
          }[]
        >('a.target', 'm.email', 'm.name');
      return new Map(rows.map((r) => [r.target, { email: r.email ?? '', name: r.name ?? '' }]));
    },
  };
}

/** Members, their sessions and one-time links, kept in the dashboard's schema. */
export function createAccess(o: AccessDeps) {
  return { ...linkAccess(o), ...signInAccess(o), ...sessionAccess(o), ...memberAccess(o) };
}

export type Access = ReturnType<typeof createAccess>;
