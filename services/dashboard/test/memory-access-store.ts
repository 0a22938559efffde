// An AccessStore in memory, for unit tests of the access use cases: it keeps what the dashboard's schema
// keeps (one email per member, links and sessions going with their member) and its transactions keep all
// or nothing, one at a time.
import { MEMBER_CHANGE_COLUMNS } from '../src/adapters/db/access-store.js';
import { signInDelaySeconds } from '../src/domain/access.js';
import type { MemberRow } from '../src/application/members.js';
import type {
  AccessRecords,
  AccessStore,
  AuditEntry,
  MemberChanges,
  NewSession,
  OneTimeLink,
} from '../src/application/ports.js';

type StoredMember = MemberRow & { failed_sign_ins: number; invited_by: string | null };

interface State {
  members: Map<string, StoredMember>;
  links: Map<string, OneTimeLink & { usedAt: Date | null }>;
  attempts: { address: string; at: Date }[];
  throttle: Map<string, { failures: number; nextAt: Date }>;
  sessions: Map<string, NewSession>;
  audit: AuditEntry[];
}

export function memoryAccessStore(): AccessStore {
  let state: State = {
    members: new Map(),
    links: new Map(),
    attempts: [],
    throttle: new Map(),
    sessions: new Map(),
    audit: [],
  };
  let queue: Promise<unknown> = Promise.resolve();
  const asRow = ({ failed_sign_ins: _f, invited_by: _i, ...row }: StoredMember): MemberRow => ({ ...row });
  const live = (hash: string, now: Date) => {
    const link = state.links.get(hash);
    return link && !link.usedAt && link.expiresAt > now ? link : undefined;
  };

  const records: AccessRecords = {
    async insertMember(m) {
      if ([...state.members.values()].some((x) => x.email === m.email)) return 'email_taken';
      state.members.set(m.memberId, {
        member_id: m.memberId,
        company_id: m.companyId,
        email: m.email,
        name: m.name,
        role: m.role,
        created_at: m.createdAt,
        last_sign_in_at: null,
        locked_until: null,
        password_hash: null,
        failed_sign_ins: 0,
        invited_by: m.invitedBy,
      });
      return 'inserted';
    },
    async memberForLink(companyId, by) {
      const m = [...state.members.values()].find(
        (x) =>
          x.company_id === companyId &&
          ('memberId' in by ? x.member_id === by.memberId : x.email === by.email),
      );
      return (
        m && { memberId: m.member_id, email: m.email, role: m.role, hasPassword: Boolean(m.password_hash) }
      );
    },
    async memberById(memberId) {
      const m = state.members.get(memberId);
      return m && asRow(m);
    },
    async memberByEmail(email) {
      const m = [...state.members.values()].find((x) => x.email === email);
      return m && { ...asRow(m), failed_sign_ins: m.failed_sign_ins };
    },
    async membersOf(companyId) {
      return [...state.members.values()]
        .filter((m) => m.company_id === companyId)
        .sort((a, b) => a.created_at.getTime() - b.created_at.getTime())
        .map(asRow);
    },
    async roleOf(companyId, memberId) {
      const m = state.members.get(memberId);
      return m?.company_id === companyId ? m.role : undefined;
    },
    async ownerCount(companyId) {
      return [...state.members.values()].filter((m) => m.company_id === companyId && m.role === 'owner')
        .length;
    },
    async updateMember(memberId, changes) {
      const m = state.members.get(memberId)!;
      for (const [key, value] of Object.entries(changes))
        if (value !== undefined)
          Object.assign(m, { [MEMBER_CHANGE_COLUMNS[key as keyof MemberChanges]]: value });
      return asRow(m);
    },
    async claimSignInAttempt(key, now, throttle) {
      const row = state.throttle.get(key);
      if (row && row.nextAt > now)
        return {
          allowed: false,
          retryAfterSeconds: Math.ceil((row.nextAt.getTime() - now.getTime()) / 1000),
        };
      const failures = (row?.failures ?? 0) + 1;
      const wait = signInDelaySeconds(failures, throttle) * 1000;
      state.throttle.set(key, { failures, nextAt: new Date(now.getTime() + wait) });
      return { allowed: true };
    },
    async clearSignInFailures(key) {
      state.throttle.delete(key);
    },
    async deleteMember(memberId) {
      state.members.delete(memberId);
      for (const [hash, link] of state.links) if (link.memberId === memberId) state.links.delete(hash);
      for (const [hash, s] of state.sessions) if (s.memberId === memberId) state.sessions.delete(hash);
    },
    async dropUnusedLinks(memberId) {
      for (const [hash, link] of state.links)
        if (link.memberId === memberId && !link.usedAt) state.links.delete(hash);
    },
    async insertLink(link) {
      state.links.set(link.tokenHash, { ...link, usedAt: null });
    },
    async liveLink(hash, now) {
      const link = live(hash, now);
      const m = link && state.members.get(link.memberId)!;
      return link && m && { purpose: link.purpose, email: m.email, name: m.name };
    },
    async takeLiveLink(hash, now) {
      const link = live(hash, now);
      return link && { memberId: link.memberId };
    },
    async markLinkUsed(hash, at) {
      const link = state.links.get(hash);
      if (link) link.usedAt = at;
    },
    async deleteLinksExpiredBefore(at) {
      for (const [hash, link] of state.links) if (link.expiresAt <= at) state.links.delete(hash);
    },
    async recordSignInAttempt(address, at) {
      state.attempts.push({ address, at });
    },
    async attemptsSince(address, since) {
      const times = state.attempts.filter((a) => a.address === address && a.at > since).map((a) => a.at);
      return { attempts: times.length, oldest: new Date(Math.min(...times.map((t) => t.getTime()))) };
    },
    async deleteSignInAttemptsBefore(at) {
      state.attempts = state.attempts.filter((a) => a.at >= at);
    },
    async createSession(session) {
      state.sessions.set(session.sessionHash, { ...session });
    },
    async sessionOf(hash, now) {
      const s = state.sessions.get(hash);
      if (!s || s.expiresAt <= now) return undefined;
      const m = state.members.get(s.memberId)!;
      return { member: asRow(m), csrf: s.csrf, createdAt: s.createdAt, lastSeenAt: s.lastSeenAt };
    },
    async extendSession(hash, lastSeenAt, expiresAt) {
      const s = state.sessions.get(hash);
      if (s) Object.assign(s, { lastSeenAt, expiresAt });
    },
    async endSession(hash) {
      return state.sessions.delete(hash) ? 1 : 0;
    },
    async endSessionsOf(memberId) {
      for (const [hash, s] of state.sessions) if (s.memberId === memberId) state.sessions.delete(hash);
    },
    async deleteSessionsExpiredBy(now) {
      for (const [hash, s] of state.sessions) if (s.expiresAt <= now) state.sessions.delete(hash);
    },
    async appendAudit(entry) {
      state.audit.push({ ...entry });
    },
    async keyCreators(companyId) {
      return new Map(
        state.audit
          .filter((a) => a.companyId === companyId && a.action === 'api_key.created')
          .map((a) => {
            const m = a.memberId ? state.members.get(a.memberId) : undefined;
            return [a.target, { email: m?.email ?? '', name: m?.name ?? '' }];
          }),
      );
    },
  };

  /** One transaction at a time; what a failed one changed is put back. */
  function transaction<T>(work: (tx: AccessRecords) => Promise<T>): Promise<T> {
    const run = queue.then(async () => {
      const before = structuredClone(state);
      try {
        return await work(records);
      } catch (error) {
        state = before;
        throw error;
      }
    });
    queue = run.catch(() => undefined);
    return run;
  }

  return {
    ...records,
    transaction,
    withCompanyLock: (_companyId, work) => transaction(work),
  };
}
