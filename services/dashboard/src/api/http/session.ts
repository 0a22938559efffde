import type { NextFunction, Request, Response } from 'express';
import { Problem } from '@mds/service-kit';
import { sameSecret } from '../../application/passwords.js';
import type { Access, Member } from '../../application/access.js';
import { can, type Permission } from '../../domain/roles.js';

export interface SessionLocals {
  member: Member;
  csrf: string;
  token: string;
}

export interface CookieSettings {
  name: string;
  secure: boolean;
  maxAgeMs: number;
}

export function cookieSettings(secure: boolean, maxHours: number): CookieSettings {
  // __Host- binds the cookie to this exact origin (no Domain, Path=/, Secure): only possible over https.
  return { name: secure ? '__Host-mds_session' : 'mds_session', secure, maxAgeMs: maxHours * 3_600_000 };
}

export function setSessionCookie(res: Response, c: CookieSettings, token: string): void {
  res.cookie(c.name, token, {
    httpOnly: true,
    sameSite: 'strict',
    secure: c.secure,
    path: '/',
    maxAge: c.maxAgeMs,
  });
}

export function clearSessionCookie(res: Response, c: CookieSettings): void {
  res.clearCookie(c.name, { httpOnly: true, sameSite: 'strict', secure: c.secure, path: '/' });
}

/** Loads the session named by the cookie, if any, into res.locals.session. */
export function loadSession(access: Access, c: CookieSettings) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const token = (req.cookies as Record<string, string | undefined>)[c.name];
    if (token && token.length <= 100) {
      const session = await access.session(token);
      if (session) res.locals.session = { ...session, token } satisfies SessionLocals;
    }
    next();
  };
}

export function sessionOf(res: Response): SessionLocals {
  const session = res.locals.session as SessionLocals | undefined;
  if (!session) throw new Problem(401, 'not_signed_in', 'Not signed in', 'Sign in to the dashboard first.');
  return session;
}

/** The signed-in member, who must be allowed `permission`. */
export function memberWith(res: Response, permission: Permission): Member {
  const { member } = sessionOf(res);
  if (!can(member.role, permission)) {
    throw new Problem(
      403,
      'forbidden',
      'Not allowed',
      `A ${member.role} cannot do this; ask an owner of the company.`,
    );
  }
  return member;
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cross-site request forgery: a changing request must come from this origin (its Origin header, when the
 * browser sends one) and, once signed in, carry the session's CSRF token in X-CSRF-Token. The cookie is
 * SameSite=Strict besides.
 */
export function csrfGuard(publicUrl: string) {
  const publicHost = new URL(publicUrl).host;
  return (req: Request, res: Response, next: NextFunction) => {
    if (SAFE.has(req.method)) return next();
    const origin = req.header('origin');
    if (origin) {
      let host: string | undefined;
      try {
        host = new URL(origin).host;
      } catch {
        host = undefined;
      }
      if (host !== req.header('host') && host !== publicHost) {
        return next(
          new Problem(
            403,
            'csrf_failed',
            'Cross-site request refused',
            'The request came from another site.',
          ),
        );
      }
    }
    const session = res.locals.session as SessionLocals | undefined;
    if (session && !sameSecret(req.header('x-csrf-token') ?? '', session.csrf)) {
      return next(
        new Problem(403, 'csrf_failed', 'Missing or wrong CSRF token', 'Reload the page and try again.'),
      );
    }
    next();
  };
}
