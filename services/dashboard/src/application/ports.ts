import type { SignInThrottle } from '../domain/access.js';
import type { Role } from '../domain/roles.js';
import type { MemberRow } from './members.js';

/**
 * What the dashboard's access use cases need from storage, declared here and implemented by adapters/ (the
 * dashboard's PostgreSQL schema). The store keeps and finds; the rules (tokens, expiry, lockout, the owner a
 * company always keeps, what is refused) stay with the use cases. Operations that must happen together run
 * in `transaction` or `withCompanyLock`, which hand the use case the same records bound to one transaction.
 */
export interface AccessRecords {
  /** Adds a member with no password yet; `email_taken` when the address is already some company's member. */
  insertMember(member: NewMember): Promise<'inserted' | 'email_taken'>;
  /** The member of the company with this id, or else this (normalised) email. */
  memberForLink(
    companyId: string,
    by: { memberId: string } | { email: string },
  ): Promise<{ memberId: string; email: string; role: Role; hasPassword: boolean } | undefined>;
  memberById(memberId: string): Promise<MemberRow | undefined>;
  memberByEmail(email: string): Promise<(MemberRow & { failed_sign_ins: number }) | undefined>;
  /** The company's members, oldest first. */
  membersOf(companyId: string): Promise<MemberRow[]>;
  /** The member's role in the company; undefined when not its member. */
  roleOf(companyId: string, memberId: string): Promise<Role | undefined>;
  ownerCount(companyId: string): Promise<number>;
  /** Changes the member and answers it as it is now. */
  updateMember(memberId: string, changes: MemberChanges): Promise<MemberRow>;
  /**
   * Counts a sign-in attempt under `key` (an email's hash) unless it must still wait, atomically: parallel
   * attempts each count, or wait. Every attempt counts as failed until clearSignInFailures says otherwise, and
   * sets when the next may come (signInDelaySeconds of the count).
   */
  claimSignInAttempt(
    key: string,
    now: Date,
    throttle: SignInThrottle,
  ): Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number }>;
  /** The attempt under `key` succeeded (or a new password was set): the count starts again. */
  clearSignInFailures(key: string): Promise<void>;
  /** Removes the member, and with them their sessions and links. */
  deleteMember(memberId: string): Promise<void>;

  /** Forgets the member's links not yet used. */
  dropUnusedLinks(memberId: string): Promise<void>;
  insertLink(link: OneTimeLink): Promise<void>;
  /** A link not yet used and not expired at `now`, with its member's email and name. */
  liveLink(
    tokenHash: string,
    now: Date,
  ): Promise<{ purpose: string; email: string; name: string } | undefined>;
  /** Same, locked until the transaction ends (so two uses of one link cannot both succeed). */
  takeLiveLink(tokenHash: string, now: Date): Promise<{ memberId: string } | undefined>;
  markLinkUsed(tokenHash: string, at: Date): Promise<void>;
  deleteLinksExpiredBefore(at: Date): Promise<void>;

  recordSignInAttempt(address: string, at: Date): Promise<void>;
  /** How many attempts came from the address after `since`, and when the oldest of them came. */
  attemptsSince(address: string, since: Date): Promise<{ attempts: number; oldest: Date }>;
  deleteSignInAttemptsBefore(at: Date): Promise<void>;

  createSession(session: NewSession): Promise<void>;
  /** The session, with its member, if it is not expired at `now`. */
  sessionOf(sessionHash: string, now: Date): Promise<StoredSession | undefined>;
  extendSession(sessionHash: string, lastSeenAt: Date, expiresAt: Date): Promise<void>;
  endSession(sessionHash: string): Promise<number>;
  endSessionsOf(memberId: string): Promise<void>;
  deleteSessionsExpiredBy(now: Date): Promise<void>;

  appendAudit(entry: AuditEntry): Promise<void>;
  /** Who made each of the company's keys through the dashboard, by key id. */
  keyCreators(companyId: string): Promise<Map<string, { email: string; name: string }>>;
}

export interface AccessStore extends AccessRecords {
  /** Runs `work` in one transaction: all its changes are kept, or none when it throws. */
  transaction<T>(work: (tx: AccessRecords) => Promise<T>): Promise<T>;
  /** Same, holding the company's member lock: changes to the company's members wait for each other. */
  withCompanyLock<T>(companyId: string, work: (tx: AccessRecords) => Promise<T>): Promise<T>;
}

export interface NewMember {
  memberId: string;
  companyId: string;
  email: string;
  name: string;
  role: Role;
  invitedBy: string | null;
  createdAt: Date;
}

export interface MemberChanges {
  passwordHash?: string;
  name?: string;
  role?: Role;
  failedSignIns?: number;
  lockedUntil?: Date | null;
  lastSignInAt?: Date;
}

export interface OneTimeLink {
  tokenHash: string;
  memberId: string;
  purpose: 'invite' | 'reset';
  createdAt: Date;
  expiresAt: Date;
}

export interface NewSession {
  sessionHash: string;
  memberId: string;
  csrf: string;
  createdAt: Date;
  lastSeenAt: Date;
  expiresAt: Date;
}

export interface StoredSession {
  member: MemberRow;
  csrf: string;
  createdAt: Date;
  lastSeenAt: Date;
}

export interface AuditEntry {
  companyId: string;
  memberId: string | null;
  action: string;
  target: string;
  detail: unknown;
  at: Date;
}
