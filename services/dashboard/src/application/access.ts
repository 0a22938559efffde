import { createHash, randomUUID } from 'node:crypto';
import { decoyHash, hashPassword, newToken, tokenHash, verifyPassword } from './passwords.js';
import { normalizeEmail, passwordProblem, sessionExpiry } from '../domain/access.js';
import type { Role } from '../domain/roles.js';
import { AccessError, toMember, type AccessPolicy, type Member } from './members.js';
import type { AccessRecords, AccessStore } from './ports.js';

export { AccessError, type AccessPolicy, type Member } from './members.js';

export interface AccessDeps {
  store: AccessStore;
  policy: AccessPolicy;
  now: () => Date;
}

const LINK_INVALID = 'This link has been used or has expired; ask for a new one.';

/** The sign-in throttle's key of an email (member or not): its SHA-256, so the table names no one. */
const throttleKey = (email: string) =>
  `email:${createHash('sha256').update(normalizeEmail(email)).digest('hex')}`;

/** Invitations and password resets: one-time links, and the password they set. */
function linkAccess(o: AccessDeps) {
  const { store, policy } = o;
  async function linkFor(records: AccessRecords, memberId: string, purpose: 'invite' | 'reset') {
    const token = newToken();
    const now = o.now();
    const expiresAt = new Date(now.getTime() + policy.linkHours * 3_600_000);
    // A new link replaces the member's unused ones.
    await records.dropUnusedLinks(memberId);
    await records.insertLink({ tokenHash: tokenHash(token), memberId, purpose, createdAt: now, expiresAt });
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
      return store.transaction(async (tx) => {
        const memberId = randomUUID();
        const inserted = await tx.insertMember({
          memberId,
          companyId: input.companyId,
          email,
          name: input.name?.trim() ?? '',
          role: input.role,
          invitedBy: input.invitedBy,
          createdAt: o.now(),
        });
        if (inserted === 'email_taken')
          throw new AccessError('email_taken', `${email} is already a member of a company.`);
        const link = await linkFor(tx, memberId, 'invite');
        return { memberId, email, ...link };
      });
    },

    /**
     * A one-time link for a member of the company to set a new password. `by` is the owner asking (undefined:
     * the operator): an owner may not reset another owner who has a password (that would take their account
     * over); re-sending an invitation an owner never used is allowed.
     */
    async resetLink(
      companyId: string,
      member: { memberId?: string; email?: string },
      by?: { memberId: string },
    ) {
      const found = await store.memberForLink(
        companyId,
        member.memberId ? { memberId: member.memberId } : { email: normalizeEmail(member.email ?? '') },
      );
      if (!found) throw new AccessError('member_not_found', 'No such member in this company.');
      if (by && by.memberId !== found.memberId && found.hasPassword && found.role === 'owner')
        throw new AccessError(
          'owner_reset_refused',
          "Another owner's password is reset by the operator (mds-admin members reset), not by an owner.",
        );
      const link = await linkFor(store, found.memberId, found.hasPassword ? 'reset' : 'invite');
      return { memberId: found.memberId, email: found.email, ...link };
    },

    /** What a one-time link is for, while it works. */
    async peekLink(token: string) {
      const link = await store.liveLink(tokenHash(token), o.now());
      if (!link) throw new AccessError('link_invalid', LINK_INVALID);
      return link;
    },

    /** Sets the password through a one-time link; ends every other session of the member; answers the member. */
    async setPassword(token: string, password: string, name?: string): Promise<Member> {
      return store.transaction(async (tx) => {
        const link = await tx.takeLiveLink(tokenHash(token), o.now());
        if (!link) throw new AccessError('link_invalid', LINK_INVALID);
        const member = await tx.memberById(link.memberId);
        const problem = passwordProblem(password, member!.email);
        if (problem) throw new AccessError('weak_password', problem);
        await tx.markLinkUsed(tokenHash(token), o.now());
        await tx.endSessionsOf(link.memberId);
        // A new password ends any slowing down of the member's sign-ins.
        await tx.clearSignInFailures(throttleKey(member!.email));
        const updated = await tx.updateMember(link.memberId, {
          passwordHash: await hashPassword(password),
          ...(name?.trim() ? { name: name.trim() } : {}),
        });
        return toMember(updated);
      });
    },
  };
}

/** Signing in: email and password, throttled per address and locked per member. */
function signInAccess(o: AccessDeps) {
  const { store, policy } = o;
  async function throttleAddress(address: string): Promise<void> {
    const now = o.now();
    const windowStart = new Date(now.getTime() - 60_000);
    await store.recordSignInAttempt(address, now);
    const window = await store.attemptsSince(address, windowStart);
    if (window.attempts > policy.signInsPerAddressPerMinute) {
      throw new AccessError(
        'too_many_attempts',
        'Too many sign-in attempts from this address; wait a minute.',
        Math.max(1, Math.ceil((window.oldest.getTime() + 60_000 - now.getTime()) / 1000)),
      );
    }
  }

  return {
    /**
     * Checks email and password, limited per address (a sliding minute) and per email (free failures, then
     * waits that double up to a cap: never a hard lock). An email that must wait gets 429 `too_many_attempts`
     * whether or not it is a member's, and an unknown email the same 401 as a wrong password, in about the same
     * time (a decoy hash is checked).
     */
    async signIn(emailInput: string, password: string, address: string): Promise<Member> {
      await throttleAddress(address);
      const email = normalizeEmail(emailInput);
      const key = throttleKey(email);
      const claim = await store.claimSignInAttempt(key, o.now(), {
        freeFailures: policy.signInFreeFailures,
        maxDelaySeconds: policy.signInMaxDelaySeconds,
      });
      if (!claim.allowed)
        throw new AccessError(
          'too_many_attempts',
          'Too many failed sign-ins for this email: wait before trying again (an owner or the operator can send a reset link).',
          claim.retryAfterSeconds,
        );
      const row = await store.memberByEmail(email);
      const ok = await verifyPassword(password, row?.password_hash ?? (await decoyHash()));
      if (!row || !row.password_hash || !ok)
        throw new AccessError('invalid_credentials', 'Wrong email or password.');
      await store.clearSignInFailures(key);
      return toMember(await store.updateMember(row.member_id, { lastSignInAt: o.now() }));
    },
  };
}

/** Sessions: started on sign-in, extended by use, swept when over. */
function sessionAccess(o: AccessDeps) {
  const { store, policy } = o;

  return {
    /** A new session: the cookie's value (shown once) and its CSRF token. */
    async startSession(memberId: string) {
      const token = newToken();
      const csrf = newToken();
      const now = o.now();
      await store.createSession({
        sessionHash: tokenHash(token),
        memberId,
        csrf,
        createdAt: now,
        lastSeenAt: now,
        expiresAt: sessionExpiry(now, now, policy.sessionIdleMinutes, policy.sessionMaxHours),
      });
      return { token, csrf };
    },

    /** The session of a cookie and its member, extended by this use; undefined when over or unknown. */
    async session(token: string): Promise<{ member: Member; csrf: string } | undefined> {
      const now = o.now();
      const session = await store.sessionOf(tokenHash(token), now);
      if (!session) return undefined;
      // Written at most once a minute per session: reading pages costs no write each time.
      if (now.getTime() - session.lastSeenAt.getTime() > 60_000) {
        await store.extendSession(
          tokenHash(token),
          now,
          sessionExpiry(session.createdAt, now, policy.sessionIdleMinutes, policy.sessionMaxHours),
        );
      }
      return { member: toMember(session.member), csrf: session.csrf };
    },

    /** Forgets what is over: expired sessions and links, sign-in windows older than an hour. */
    async sweep(): Promise<void> {
      const now = o.now();
      await store.deleteSessionsExpiredBy(now);
      await store.deleteLinksExpiredBefore(new Date(now.getTime() - 86_400_000));
      await store.deleteSignInAttemptsBefore(new Date(now.getTime() - 3_600_000));
    },

    endSession: (token: string) => store.endSession(tokenHash(token)),
  };
}

/** A company's members, their roles, and the audit trail of what they did. */
function memberAccess(o: AccessDeps) {
  const { store } = o;
  async function keepAnOwner(tx: AccessRecords, companyId: string) {
    if ((await tx.ownerCount(companyId)) <= 1)
      throw new AccessError(
        'last_owner',
        'The company must keep at least one owner: make someone else owner first.',
      );
  }

  return {
    async members(companyId: string): Promise<Member[]> {
      return (await store.membersOf(companyId)).map(toMember);
    },

    /** Changes a member's role; the company always keeps an owner. */
    async setRole(companyId: string, memberId: string, role: Role): Promise<Member> {
      return store.withCompanyLock(companyId, async (tx) => {
        const current = await tx.roleOf(companyId, memberId);
        if (!current) throw new AccessError('member_not_found', 'No such member in this company.');
        if (current === 'owner' && role !== 'owner') await keepAnOwner(tx, companyId);
        // A changed role takes effect on the next request: sessions read the member each time.
        return toMember(await tx.updateMember(memberId, { role }));
      });
    },

    /** Removes a member and ends their sessions; the company always keeps an owner. */
    async remove(companyId: string, memberId: string): Promise<void> {
      await store.withCompanyLock(companyId, async (tx) => {
        const current = await tx.roleOf(companyId, memberId);
        if (!current) throw new AccessError('member_not_found', 'No such member in this company.');
        if (current === 'owner') await keepAnOwner(tx, companyId);
        // Their sessions and links go with them (the schema deletes them in cascade).
        await tx.deleteMember(memberId);
      });
    },

    async audit(entry: {
      companyId: string;
      memberId: string | null;
      action: string;
      target?: string;
      detail?: unknown;
    }) {
      await store.appendAudit({
        companyId: entry.companyId,
        memberId: entry.memberId,
        action: entry.action,
        target: entry.target ?? '',
        detail: entry.detail,
        at: o.now(),
      });
    },

    /** Who made each of the company's keys through the dashboard (by key id). */
    keyCreators: (companyId: string) => store.keyCreators(companyId),
  };
}

/** Members, their sessions and one-time links: the rules of access over an `AccessStore`. */
export function createAccess(o: AccessDeps) {
  return { ...linkAccess(o), ...signInAccess(o), ...sessionAccess(o), ...memberAccess(o) };
}

export type Access = ReturnType<typeof createAccess>;
