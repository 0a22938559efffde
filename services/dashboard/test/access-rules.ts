// The rules of access (links, passwords, sign-in throttling, the owner a company keeps, sessions), written once and run
// over each AccessStore: the one in memory (access.unit.test.ts) and PostgreSQL's (access-store.int.test.ts),
// so the unit tests' store is held to what the real one does. access.int.test.ts runs them through HTTP.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { AccessError, createAccess } from '../src/application/access.js';
import type { AccessStore } from '../src/application/ports.js';

const PASSWORD = 'correct horse battery staple';
const POLICY = {
  sessionIdleMinutes: 30,
  sessionMaxHours: 2,
  signInFreeFailures: 3,
  signInMaxDelaySeconds: 900,
  signInsPerAddressPerMinute: 100,
  linkHours: 24,
};

/** Every case of the rules, each on a fresh access over `newStore()` and its own clock. */
export function accessRules(newStore: () => AccessStore) {
  function setup(policy = POLICY) {
    let clock = new Date('2026-03-01T09:00:00Z');
    const store = newStore();
    const access = createAccess({ store, policy, now: () => clock });
    const advance = (minutes: number) => {
      clock = new Date(clock.getTime() + minutes * 60_000);
    };
    return { access, advance };
  }

  /** The refusal's code (and Retry-After), or 'ok' when it went through. */
  async function refusal(work: Promise<unknown>) {
    try {
      await work;
      return 'ok';
    } catch (error) {
      if (!(error instanceof AccessError)) throw error;
      return error.retryAfterSeconds ? `${error.code} ${error.retryAfterSeconds}` : error.code;
    }
  }

  async function signedUpMember(
    access: ReturnType<typeof createAccess>,
    companyId = randomUUID(),
    role: 'owner' | 'developer' | 'viewer' = 'owner',
    email = `${randomUUID()}@example.test`,
  ) {
    const invited = await access.invite({ companyId, email, role, invitedBy: null });
    const member = await access.setPassword(invited.token, PASSWORD);
    return { companyId, email, member };
  }

  describe('an invitation', () => {
    it('makes a member without a password whose one-time link sets it, and they can sign in', async () => {
      const { access } = setup();
      const companyId = randomUUID();
      const invited = await access.invite({
        companyId,
        email: '  Ann@Example.TEST ',
        name: ' Ann ',
        role: 'owner',
        invitedBy: null,
      });
      expect(invited.email).toBe('ann@example.test');
      expect(await access.peekLink(invited.token)).toEqual({
        purpose: 'invite',
        email: 'ann@example.test',
        name: 'Ann',
      });
      expect((await access.members(companyId)).map((m) => m.has_password)).toEqual([false]);
      expect(await refusal(access.signIn('ann@example.test', PASSWORD, '10.0.0.1'))).toBe(
        'invalid_credentials',
      );

      expect(await refusal(access.setPassword(invited.token, 'short'))).toBe('weak_password');
      expect(await refusal(access.setPassword(invited.token, 'ann@example.test'))).toBe('weak_password');
      // A refused password leaves the link working.
      const member = await access.setPassword(invited.token, PASSWORD, 'Ann Smith');
      expect(member).toMatchObject({ email: 'ann@example.test', name: 'Ann Smith', has_password: true });
      expect(member).not.toHaveProperty('password_hash');

      const signedIn = await access.signIn('ANN@example.test', PASSWORD, '10.0.0.1');
      expect(signedIn.member_id).toBe(invited.memberId);
      expect(signedIn.last_sign_in_at).toBeInstanceOf(Date);
    });

    it('refuses an email that is already a member of a company, and keeps nothing of the attempt', async () => {
      const { access } = setup();
      const companyId = randomUUID();
      const first = await access.invite({
        companyId: randomUUID(),
        email: 'bo@example.test',
        role: 'owner',
        invitedBy: null,
      });
      expect(
        await refusal(
          access.invite({ companyId, email: 'BO@example.test', role: 'viewer', invitedBy: null }),
        ),
      ).toBe('email_taken');
      expect(await access.members(companyId)).toEqual([]);
      expect((await access.peekLink(first.token)).email).toBe('bo@example.test');
    });
  });

  describe('a one-time link', () => {
    it('works once', async () => {
      const { access } = setup();
      const invited = await access.invite({
        companyId: randomUUID(),
        email: 'cy@example.test',
        role: 'viewer',
        invitedBy: null,
      });
      await access.setPassword(invited.token, PASSWORD);
      expect(await refusal(access.setPassword(invited.token, 'another long passphrase'))).toBe(
        'link_invalid',
      );
      expect(await refusal(access.peekLink(invited.token))).toBe('link_invalid');
      expect(await refusal(access.peekLink('not a token we made'))).toBe('link_invalid');
      expect(await refusal(access.signIn('cy@example.test', PASSWORD, '10.0.0.1'))).toBe('ok');
    });

    it('expires after its hours, and a new one replaces the unused one', async () => {
      const { access, advance } = setup();
      const companyId = randomUUID();
      const first = await access.invite({
        companyId,
        email: 'di@example.test',
        role: 'viewer',
        invitedBy: null,
      });
      advance(24 * 60);
      expect(await refusal(access.peekLink(first.token))).toBe('link_invalid');
      expect(await refusal(access.setPassword(first.token, PASSWORD))).toBe('link_invalid');

      // No password yet: the new link is still an invitation.
      const second = await access.resetLink(companyId, { email: 'DI@example.test' });
      const third = await access.resetLink(companyId, { memberId: second.memberId });
      expect(await refusal(access.peekLink(second.token))).toBe('link_invalid');
      expect((await access.peekLink(third.token)).purpose).toBe('invite');
      advance(24 * 60 - 1);
      await access.setPassword(third.token, PASSWORD);
      expect(
        (await access.peekLink((await access.resetLink(companyId, { memberId: second.memberId })).token))
          .purpose,
      ).toBe('reset');
      expect(await refusal(access.resetLink(randomUUID(), { memberId: second.memberId }))).toBe(
        'member_not_found',
      );
    });
  });

  describe('signing in', () => {
    it('slows an email down after its free failures, 1 s doubling, and never locks it for good', async () => {
      const { access, advance } = setup();
      const { email } = await signedUpMember(access);
      const seconds = (n: number) => advance(n / 60);
      for (let i = 0; i < POLICY.signInFreeFailures; i++)
        expect(await refusal(access.signIn(email, 'wrong password here', '10.0.0.2'))).toBe(
          'invalid_credentials',
        );
      // The third failure asks for 1 s: even the right password waits, saying how long.
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.2'))).toBe('too_many_attempts 1');
      seconds(1);
      expect(await refusal(access.signIn(email, 'wrong password here', '10.0.0.2'))).toBe(
        'invalid_credentials',
      );
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.2'))).toBe('too_many_attempts 2');
      seconds(2);
      // The right password, once let through, starts the count again.
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.2'))).toBe('ok');
      for (let i = 0; i < POLICY.signInFreeFailures - 1; i++)
        await refusal(access.signIn(email, 'wrong password here', '10.0.0.2'));
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.2'))).toBe('ok');
    });

    it('waits at most the cap however long the guessing goes on, and a new password ends the wait', async () => {
      const { access, advance } = setup();
      const { companyId, email, member } = await signedUpMember(access);
      for (let i = 0; i < 30; i++) {
        await refusal(access.signIn(email, 'wrong password here', '10.0.0.3'));
        advance(POLICY.signInMaxDelaySeconds / 60);
      }
      await refusal(access.signIn(email, 'wrong password here', '10.0.0.3'));
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.3'))).toBe(
        `too_many_attempts ${POLICY.signInMaxDelaySeconds}`,
      );
      const reset = await access.resetLink(companyId, { memberId: member.member_id });
      await access.setPassword(reset.token, 'a brand new passphrase');
      expect(await refusal(access.signIn(email, 'a brand new passphrase', '10.0.0.3'))).toBe('ok');
    });

    it('answers a slowed-down member and an unknown email alike', async () => {
      const { access } = setup();
      const { email } = await signedUpMember(access);
      const stranger = `${randomUUID()}@example.test`;
      const answers: string[][] = [[], []];
      for (let i = 0; i < POLICY.signInFreeFailures + 2; i++) {
        answers[0]!.push(await refusal(access.signIn(email, 'wrong password here', '10.0.0.6')));
        answers[1]!.push(await refusal(access.signIn(stranger, 'wrong password here', '10.0.0.7')));
      }
      expect(answers[0]).toEqual(answers[1]);
      expect(answers[0]).toEqual([
        'invalid_credentials',
        'invalid_credentials',
        'invalid_credentials',
        'too_many_attempts 1',
        'too_many_attempts 1',
      ]);
    });

    it('counts parallel wrong guesses each: exactly the free ones are checked, the rest wait', async () => {
      const { access } = setup();
      const { email } = await signedUpMember(access);
      const outcomes = await Promise.all(
        Array.from({ length: 12 }, () => refusal(access.signIn(email, 'wrong password here', '10.0.0.8'))),
      );
      expect(outcomes.filter((o) => o === 'invalid_credentials')).toHaveLength(POLICY.signInFreeFailures);
      expect(outcomes.filter((o) => o.startsWith('too_many_attempts'))).toHaveLength(
        12 - POLICY.signInFreeFailures,
      );
    });

    it('answers an unknown email as a wrong password, and limits attempts per address', async () => {
      const { access, advance } = setup({ ...POLICY, signInsPerAddressPerMinute: 2 });
      const { email } = await signedUpMember(access);
      expect(await refusal(access.signIn('nobody@example.test', PASSWORD, '10.0.0.4'))).toBe(
        'invalid_credentials',
      );
      advance(0.5);
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.4'))).toBe('ok');
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.4'))).toBe('too_many_attempts 30');
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.5'))).toBe('ok');
      advance(0.5);
      expect(await refusal(access.signIn(email, PASSWORD, '10.0.0.4'))).toBe('too_many_attempts 30');
    });
  });

  describe("a company's owners", () => {
    it('cannot lose the last: not demoted, not removed', async () => {
      const { access } = setup();
      const { companyId, member: owner } = await signedUpMember(access);
      expect(await refusal(access.setRole(companyId, owner.member_id, 'developer'))).toBe('last_owner');
      expect(await refusal(access.remove(companyId, owner.member_id))).toBe('last_owner');
      expect(await refusal(access.setRole(companyId, owner.member_id, 'owner'))).toBe('ok');

      const { member: second } = await signedUpMember(access, companyId, 'viewer');
      expect((await access.setRole(companyId, second.member_id, 'owner')).role).toBe('owner');
      expect((await access.setRole(companyId, owner.member_id, 'viewer')).role).toBe('viewer');
      expect(await refusal(access.remove(companyId, second.member_id))).toBe('last_owner');
      await access.remove(companyId, owner.member_id);
      expect((await access.members(companyId)).map((m) => [m.member_id, m.role])).toEqual([
        [second.member_id, 'owner'],
      ]);
    });

    it("may not reset another owner's password (no co-owner takeover), but may re-invite one who never set it", async () => {
      const { access } = setup();
      const { companyId, member: owner } = await signedUpMember(access);
      const { member: coOwner } = await signedUpMember(access, companyId, 'owner');
      const { member: developer } = await signedUpMember(access, companyId, 'developer');
      const by = { memberId: owner.member_id };
      expect(await refusal(access.resetLink(companyId, { memberId: coOwner.member_id }, by))).toBe(
        'owner_reset_refused',
      );
      expect(await refusal(access.resetLink(companyId, { memberId: developer.member_id }, by))).toBe('ok');
      expect(await refusal(access.resetLink(companyId, { memberId: owner.member_id }, by))).toBe('ok');
      const pending = await access.invite({
        companyId,
        email: `${randomUUID()}@example.test`,
        role: 'owner',
        invitedBy: owner.member_id,
      });
      expect(await refusal(access.resetLink(companyId, { memberId: pending.memberId }, by))).toBe('ok');
      // The operator (no `by`) may reset any member.
      expect(await refusal(access.resetLink(companyId, { memberId: coOwner.member_id }))).toBe('ok');
    });

    it("never reach another company's member", async () => {
      const { access } = setup();
      const { companyId } = await signedUpMember(access);
      const { member: other } = await signedUpMember(access);
      expect(await refusal(access.setRole(companyId, other.member_id, 'viewer'))).toBe('member_not_found');
      expect(await refusal(access.remove(companyId, other.member_id))).toBe('member_not_found');
      expect(await refusal(access.remove(companyId, randomUUID()))).toBe('member_not_found');
    });

    it('decided one at a time: two owners demoting each other at once leave one owner', async () => {
      const { access } = setup();
      const { companyId, member: a } = await signedUpMember(access);
      const { member: b } = await signedUpMember(access, companyId, 'owner');
      const outcomes = await Promise.all([
        refusal(access.setRole(companyId, a.member_id, 'viewer')),
        refusal(access.setRole(companyId, b.member_id, 'viewer')),
      ]);
      expect(outcomes.sort()).toEqual(['last_owner', 'ok']);
    });
  });

  describe('a session', () => {
    it('is extended by use, ends after the idle minutes, and after the most hours in any case', async () => {
      const { access, advance } = setup();
      const { member } = await signedUpMember(access);
      const { token, csrf } = await access.startSession(member.member_id);
      expect((await access.session(token))?.csrf).toBe(csrf);
      // Used every 29 minutes, it outlives 30 idle minutes: at 29, 58, 87, 116 and 119 minutes.
      for (const step of [29, 29, 29, 29, 3]) {
        advance(step);
        expect((await access.session(token))?.member.member_id).toBe(member.member_id);
      }
      advance(2); // 121 minutes: past the two hours whatever the use
      expect(await access.session(token)).toBeUndefined();

      const idle = await access.startSession(member.member_id);
      advance(29);
      expect(await access.session(idle.token)).toBeDefined();
      advance(29);
      expect(await access.session(idle.token)).toBeDefined();
      advance(31);
      expect(await access.session(idle.token)).toBeUndefined();
    });

    it('ends on sign-out, on a new password, and with its member', async () => {
      const { access } = setup();
      const { companyId, member } = await signedUpMember(access);
      const { member: other } = await signedUpMember(access, companyId, 'owner');
      const signedOut = await access.startSession(member.member_id);
      expect(await access.endSession(signedOut.token)).toBe(1);
      expect(await access.session(signedOut.token)).toBeUndefined();

      const before = await access.startSession(member.member_id);
      const reset = await access.resetLink(companyId, { memberId: member.member_id });
      await access.setPassword(reset.token, 'a brand new passphrase');
      expect(await access.session(before.token)).toBeUndefined();

      const removed = await access.startSession(other.member_id);
      await access.remove(companyId, other.member_id);
      expect(await access.session(removed.token)).toBeUndefined();
    });

    it('carries the role as it is now', async () => {
      const { access } = setup();
      const { companyId, member } = await signedUpMember(access);
      const { member: dev } = await signedUpMember(access, companyId, 'developer');
      const { token } = await access.startSession(dev.member_id);
      await access.setRole(companyId, dev.member_id, 'viewer');
      expect((await access.session(token))?.member.role).toBe('viewer');
      expect(member.role).toBe('owner');
    });
  });
}
