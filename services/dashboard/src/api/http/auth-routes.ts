import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { parseOr422, Problem, refuseInvalidCharacters } from '@mds/service-kit';
import type { Member } from '../../application/access.js';
import { PASSWORD_MAX } from '../../domain/access.js';
import { can, PERMISSIONS, ROLES } from '../../domain/roles.js';
import type { ApiDeps } from './deps.js';
import { clearSessionCookie, memberWith, sessionOf, setSessionCookie } from './session.js';

/** A string the dashboard stores or looks up: the public API's one rule first (422 `invalid_characters`). */
const text = () => z.string().superRefine(refuseInvalidCharacters);

const schemas = {
  signIn: z.strictObject({
    email: text().trim().min(1).max(320),
    password: z.string().min(1).max(PASSWORD_MAX),
  }),
  token: z.strictObject({ token: z.string().min(20).max(100) }),
  redeem: z.strictObject({
    token: z.string().min(20).max(100),
    password: z
      .string()
      .min(1)
      .max(PASSWORD_MAX * 4),
    name: text().trim().max(100).optional(),
  }),
  invite: z.strictObject({
    email: z.email().max(320),
    role: z.enum(ROLES),
    name: text().trim().max(100).optional(),
  }),
  role: z.strictObject({ role: z.enum(ROLES) }),
};

const memberView = (m: Member) => ({
  member_id: m.member_id,
  email: m.email,
  name: m.name,
  role: m.role,
  created_at: m.created_at,
  last_sign_in_at: m.last_sign_in_at,
  active: m.has_password,
  locked: Boolean(m.locked_until && m.locked_until > new Date()),
});

/**
 * A one-time link as the API answers it. The person opens it at /set-password; the token rides in the URL's
 * fragment, which never reaches a server log.
 */
export function linkAnswer(
  publicUrl: string,
  link: { memberId: string; email: string; token: string; expiresAt: Date },
) {
  return {
    member_id: link.memberId,
    email: link.email,
    link: `${publicUrl.replace(/\/$/, '')}/set-password#${link.token}`,
    expires_at: link.expiresAt,
  };
}

/** Sign-in, the session, one-time links, and the company's members. */
export function authRouter(d: ApiDeps): Router {
  const router = express.Router();

  async function sessionView(member: Member, csrf: string) {
    const company = await d
      .registry(member)
      .call<{ company_id: string; name: string }>('GET', `/companies/${member.company_id}`);
    return {
      member: memberView(member),
      company: { company_id: company.company_id, name: company.name },
      csrf_token: csrf,
      permissions: PERMISSIONS.filter((p) => can(member.role, p)),
      live_refresh_ms: d.liveRefreshMs,
    };
  }

  async function signedIn(res: Response, member: Member) {
    const { token, csrf } = await d.access.startSession(member.member_id);
    setSessionCookie(res, d.cookies, token);
    res.json(await sessionView(member, csrf));
  }

  router.get('/session', async (_req, res) => {
    const session = sessionOf(res);
    res.json(await sessionView(session.member, session.csrf));
  });

  router.post('/session', async (req: Request, res) => {
    const body = parseOr422(schemas.signIn, req.body);
    const previous = res.locals.session as { token: string } | undefined;
    if (previous) await d.access.endSession(previous.token);
    await signedIn(res, await d.access.signIn(body.email, body.password, req.ip ?? 'unknown'));
  });

  router.delete('/session', async (_req, res) => {
    const session = res.locals.session as { token: string } | undefined;
    if (session) await d.access.endSession(session.token);
    clearSessionCookie(res, d.cookies);
    res.status(204).end();
  });

  router.post('/links/peek', async (req, res) => {
    const body = parseOr422(schemas.token, req.body);
    res.json(await d.access.peekLink(body.token));
  });

  router.post('/links/redeem', async (req, res) => {
    const body = parseOr422(schemas.redeem, req.body);
    await signedIn(res, await d.access.setPassword(body.token, body.password, body.name));
  });

  router.get('/members', async (_req, res) => {
    const member = memberWith(res, 'read');
    res.json({ members: (await d.access.members(member.company_id)).map(memberView) });
  });

  router.post('/members', async (req, res) => {
    const owner = memberWith(res, 'manage-members');
    const body = parseOr422(schemas.invite, req.body);
    const invited = await d.access.invite({
      companyId: owner.company_id,
      email: body.email,
      role: body.role,
      ...(body.name ? { name: body.name } : {}),
      invitedBy: owner.member_id,
    });
    await d.access.audit({
      companyId: owner.company_id,
      memberId: owner.member_id,
      action: 'member.invited',
      target: invited.memberId,
    });
    res.status(201).json({ ...linkAnswer(d.publicUrl, invited), role: body.role });
  });

  router.patch('/members/:memberId', async (req, res) => {
    const owner = memberWith(res, 'manage-members');
    const body = parseOr422(schemas.role, req.body);
    const member = await d.access.setRole(owner.company_id, memberIdOf(req), body.role);
    await d.access.audit({
      companyId: owner.company_id,
      memberId: owner.member_id,
      action: 'member.role',
      target: member.member_id,
      detail: { role: body.role },
    });
    res.json(memberView(member));
  });

  router.delete('/members/:memberId', async (req, res) => {
    const owner = memberWith(res, 'manage-members');
    await d.access.remove(owner.company_id, memberIdOf(req));
    await d.access.audit({
      companyId: owner.company_id,
      memberId: owner.member_id,
      action: 'member.removed',
      target: memberIdOf(req),
    });
    res.status(204).end();
  });

  router.post('/members/:memberId/reset-link', async (req, res) => {
    const owner = memberWith(res, 'manage-members');
    const link = await d.access.resetLink(
      owner.company_id,
      { memberId: memberIdOf(req) },
      { memberId: owner.member_id },
    );
    await d.access.audit({
      companyId: owner.company_id,
      memberId: owner.member_id,
      action: 'member.reset_link',
      target: memberIdOf(req),
    });
    res.json(linkAnswer(d.publicUrl, link));
  });

  return router;
}

const uuid = z.uuid();
function memberIdOf(req: Request): string {
  const id = uuid.safeParse(req.params.memberId);
  if (!id.success)
    throw new Problem(404, 'member_not_found', 'Member not found', 'No such member in this company.');
  return id.data;
}
