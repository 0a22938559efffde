import { AsyncLocalStorage } from 'node:async_hooks';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '@mds/logging';
import type { Access } from '../../application/access.js';
import type { SessionLocals } from './session.js';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Not a member's action on the company: signing in and out, and one-time links (before any session). */
const NOT_ACTIONS = /^\/(session|links\/[a-z]+)$/;

const inFlight = new AsyncLocalStorage<{ audited: boolean }>();

/** The audit trail as the routes write it: each write marks the request in flight as audited. */
export function noticedAudit(access: Access): Access {
  return {
    ...access,
    audit: (entry) => {
      const request = inFlight.getStore();
      if (request) request.audited = true;
      return access.audit(entry);
    },
  };
}

/** A route that answers success yet writes no row on purpose (a replayed answer: its row is there already). */
export function alreadyAudited(): void {
  const request = inFlight.getStore();
  if (request) request.audited = true;
}

/**
 * Every change a signed-in member makes leaves a row in the audit trail, by construction: a route writes its
 * own (an action's name and target); one that succeeds without it (a route added and its row forgotten) gets a
 * row naming the request (`request`, target "POST /path/:param") and a warning in the log. Mount it before the
 * routes, after the session is loaded; the routes' writes go through noticedAudit.
 */
export function auditEveryChange(access: Access, logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (SAFE.has(req.method) || NOT_ACTIONS.test(req.path)) return next();
    const request = { audited: false };
    res.on('finish', () => {
      const session = res.locals.session as SessionLocals | undefined;
      if (request.audited || !session || res.statusCode >= 400) return;
      // The route's pattern (no ids in it) when the router left it; else the path.
      const pattern = (req.route as { path?: unknown } | undefined)?.path;
      const route = `${req.method} ${typeof pattern === 'string' ? pattern : req.originalUrl.split('?')[0]}`;
      logger.warn({ route }, 'a change left no row in the audit trail: recorded as a request');
      access
        .audit({
          companyId: session.member.company_id,
          memberId: session.member.member_id,
          action: 'request',
          target: route,
        })
        .catch((error: unknown) => logger.error({ err: error, route }, 'could not audit a request'));
    });
    inFlight.run(request, next);
  };
}
