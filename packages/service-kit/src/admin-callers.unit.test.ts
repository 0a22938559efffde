import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signCompanyAssertion, verifyCompanyAssertion } from './admin-callers.js';

const current = generateKeyPairSync('ed25519');
const next = generateKeyPairSync('ed25519');
const actor = { companyId: 'c0ffee00-0000-4000-8000-000000000001', memberId: 'm1', role: 'owner' };

/** A JWT signed as given, for the assertions the dashboard never makes. */
function token(claims: Record<string, unknown>, key: KeyObject = current.privateKey): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const head = `${b64({ alg: 'EdDSA', typ: 'JWT' })}.${b64(claims)}`;
  return `${head}.${sign(null, Buffer.from(head), key).toString('base64url')}`;
}
const now = Math.floor(Date.now() / 1000);
const claims = {
  iss: 'mds-dashboard',
  aud: 'gateway',
  sub: 'm1',
  company_id: actor.companyId,
  iat: now,
  exp: now + 60,
};

describe('the dashboard’s assertions', () => {
  it('are accepted for their audience, signed by any trusted key (a rotation), naming the actor', async () => {
    for (const key of [current, next]) {
      const assertion = await signCompanyAssertion(key.privateKey, 'gateway', actor);
      expect(await verifyCompanyAssertion(assertion, [current.publicKey, next.publicKey], 'gateway')).toEqual(
        {
          ok: true,
          actor,
        },
      );
    }
  });

  it('are refused with why, never thrown at: another audience, key, issuer; expired, too long, no company', async () => {
    const keys = [current.publicKey];
    const refused = [
      await signCompanyAssertion(current.privateKey, 'client-registry', actor),
      await signCompanyAssertion(next.privateKey, 'gateway', actor),
      token({ ...claims, iss: 'someone' }),
      token({ ...claims, iat: now - 600, exp: now - 120 }),
      token({ ...claims, exp: now + 3_600 }),
      token({ ...claims, company_id: undefined }),
      'not.a.jwt',
      'garbage',
    ];
    for (const assertion of refused) {
      const verdict = await verifyCompanyAssertion(assertion, keys, 'gateway');
      expect(verdict).toEqual({ ok: false, why: expect.any(String) });
    }
    const good = await signCompanyAssertion(current.privateKey, 'gateway', actor);
    expect(await verifyCompanyAssertion(good, [], 'gateway')).toEqual({ ok: false, why: expect.any(String) });
  });
});
