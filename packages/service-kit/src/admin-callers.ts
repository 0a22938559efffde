import { createPrivateKey, createPublicKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { Problem } from './problems.js';

/**
 * Who calls an admin API (client-registry's, webhook-dispatcher's):
 * - the operator (`mds-admin`, scripts), with the service's admin token: every operation;
 * - the dashboard, acting for the signed-in member of one company, with a short-lived assertion it signs for
 *   that company and this service (audience): only that company's operations, never the global ones (listing
 *   or creating companies, reseal, forget). The services check it, not the dashboard's path building.
 */
export type AdminCaller =
  { kind: 'operator' } | { kind: 'dashboard'; companyId: string; memberId: string; role: string };

/** The dashboard's issuer name in its assertions. */
const ISSUER = 'mds-dashboard';
/** An assertion lives this long (the dashboard signs one per call). */
export const ASSERTION_TTL_SECONDS = 60;
/** Longest lifetime a verifier accepts (exp - iat), and the clock skew it tolerates. */
const MAX_LIFETIME_SECONDS = 300;
const CLOCK_TOLERANCE_SECONDS = 30;

const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');
const B64URL_32 = /^[A-Za-z0-9_-]{43}$/;

/** An Ed25519 private key from its 32-byte seed in base64url (a JWK's `d`). */
export function dashboardSigningKey(seed: string): KeyObject {
  if (!B64URL_32.test(seed)) throw new Error('an Ed25519 private key: 43 base64url characters (a JWK "d")');
  return createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519_PREFIX, Buffer.from(seed, 'base64url')]),
    format: 'der',
    type: 'pkcs8',
  });
}

/** Ed25519 public keys from their 32 bytes in base64url (a JWK's `x`), comma separated (two during a rotation). */
export function dashboardPublicKeys(list: string): KeyObject[] {
  return list
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((x) => {
      if (!B64URL_32.test(x))
        throw new Error('Ed25519 public keys: 43 base64url characters each (a JWK "x")');
      return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
    });
}

/** The public key (base64url, a JWK's `x`) of a signing key: what the services are given to verify with. */
export function publicKeyOf(signingKey: KeyObject): string {
  return createPublicKey(signingKey).export({ format: 'jwk' }).x!;
}

/** What the dashboard asserts: the member it acts for, their company and role. */
export interface CompanyActor {
  companyId: string;
  memberId: string;
  role: string;
}

/** Signs the dashboard's assertion that it acts for `actor` towards `audience` (a service name), for 60 s. */
export function signCompanyAssertion(
  signingKey: KeyObject,
  audience: string,
  actor: CompanyActor,
): Promise<string> {
  return new SignJWT({ company_id: actor.companyId, role: actor.role })
    .setProtectedHeader({ alg: 'EdDSA', typ: 'JWT' })
    .setIssuer(ISSUER)
    .setAudience(audience)
    .setSubject(actor.memberId)
    .setIssuedAt()
    .setExpirationTime(`${ASSERTION_TTL_SECONDS}s`)
    .sign(signingKey);
}

const unauthorized = (setting: string, why?: string) =>
  new Problem(
    401,
    'unauthorized',
    'Unauthorized',
    why ??
      `This API needs "Authorization: Bearer <${setting}>" (or the dashboard's assertion for a company).`,
  );

/**
 * Verifies a dashboard assertion (an EdDSA JWT) for `audience`: signed by one of `keys` (two during a rotation),
 * issued by the dashboard, naming a member (`sub`) and a company, at most 5 minutes long, not expired (30 s of
 * clock skew). Any other token is refused with why, never thrown at (only an unexpected error throws).
 */
export async function verifyCompanyAssertion(
  token: string,
  keys: readonly KeyObject[],
  audience: string,
): Promise<{ ok: true; actor: CompanyActor } | { ok: false; why: string }> {
  if (keys.length === 0) return { ok: false, why: 'This service trusts no dashboard key.' };
  if (token.split('.').length !== 3) return { ok: false, why: 'Not an assertion.' };
  for (const key of keys) {
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms: ['EdDSA'],
        issuer: ISSUER,
        audience,
        requiredClaims: ['exp', 'iat', 'sub'],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      const companyId = payload.company_id;
      if (typeof companyId !== 'string' || payload.exp! - payload.iat! > MAX_LIFETIME_SECONDS)
        return { ok: false, why: 'The assertion names no company or lives too long.' };
      return {
        ok: true,
        actor: {
          companyId,
          memberId: payload.sub!,
          role: typeof payload.role === 'string' ? payload.role : '',
        },
      };
    } catch (error) {
      // Another key may have signed it (a rotation); anything but a bad signature is final.
      if (error instanceof joseErrors.JWSSignatureVerificationFailed) continue;
      if (error instanceof joseErrors.JOSEError)
        return { ok: false, why: `The assertion is not accepted (${error.code}).` };
      throw error;
    }
  }
  return { ok: false, why: 'The assertion is not signed by a key this service trusts.' };
}

/**
 * Admits the operator (`Authorization: Bearer <admin token>`, compared in constant time) or the dashboard (its
 * assertion for this `audience`, verifyCompanyAssertion); anything else is 401. The caller is in res.locals
 * (adminCallerOf). Without dashboard keys only the operator is admitted.
 */
export function adminCallers(o: {
  operatorToken: string;
  /** The setting holding the operator token (named in the 401's detail). */
  operatorSetting: string;
  audience: string;
  dashboardKeys?: readonly KeyObject[];
}) {
  const expected = Buffer.from(o.operatorToken);
  const keys = o.dashboardKeys ?? [];
  return async (req: Request, res: Response, next: NextFunction) => {
    const presented = /^Bearer (.+)$/.exec(req.header('authorization') ?? '')?.[1] ?? '';
    const bytes = Buffer.from(presented);
    if (bytes.length === expected.length && timingSafeEqual(bytes, expected)) {
      res.locals.adminCaller = { kind: 'operator' } satisfies AdminCaller;
      return next();
    }
    if (keys.length === 0 || presented.split('.').length !== 3) return next(unauthorized(o.operatorSetting));
    try {
      const verdict = await verifyCompanyAssertion(presented, keys, o.audience);
      if (!verdict.ok) return next(unauthorized(o.operatorSetting, verdict.why));
      res.locals.adminCaller = { kind: 'dashboard', ...verdict.actor } satisfies AdminCaller;
      next();
    } catch (error) {
      next(error);
    }
  };
}

export const adminCallerOf = (res: Response) => res.locals.adminCaller as AdminCaller;

/** 403 `operator_only` for the dashboard: the operations that reach every company (list, create, reseal, forget). */
export function operatorOnly(_req: Request, res: Response, next: NextFunction): void {
  if (adminCallerOf(res).kind !== 'operator') {
    return next(
      new Problem(
        403,
        'operator_only',
        'Forbidden',
        "Only the operator may do this (the dashboard's identity acts for one company's routine operations).",
      ),
    );
  }
  next();
}

/**
 * For `router.param('companyId', ...)`: the dashboard may name only the company its assertion is for (403
 * `company_not_allowed` for any other); the operator any.
 */
export function companyScope(_req: Request, res: Response, next: NextFunction, companyId: unknown): void {
  const caller = adminCallerOf(res);
  if (caller.kind === 'dashboard' && caller.companyId !== String(companyId)) {
    return next(
      new Problem(
        403,
        'company_not_allowed',
        'Forbidden',
        'The caller acts for another company: it may not act for this one.',
      ),
    );
  }
  next();
}

/** True when the caller may see what belongs to `companyId` (the operator: everything). */
export function mayActFor(res: Response, companyId: string): boolean {
  const caller = adminCallerOf(res);
  return caller.kind === 'operator' || caller.companyId === companyId;
}
