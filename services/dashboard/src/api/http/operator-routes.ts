import express, { type Request, type Router } from 'express';
import { z } from 'zod';
import { bearerGuard, jsonBody, parseOr422, Problem, refuseInvalidCharacters } from '@mds/service-kit';
import { ROLES } from '../../domain/roles.js';
import { linkAnswer } from './auth-routes.js';
import type { ApiDeps } from './deps.js';

const schemas = {
  member: z.strictObject({
    email: z.email().max(320),
    role: z.enum(ROLES).default('owner'),
    name: z.string().superRefine(refuseInvalidCharacters).trim().max(100).optional(),
  }),
  reset: z.strictObject({ email: z.email().max(320) }),
};

/**
 * The operator's API (mds-admin): a company's first owner, and a password reset link for any member. Each
 * answers the one-time link to hand to the person; the operator never knows a password.
 */
export function operatorRouter(d: ApiDeps, adminToken: string): Router {
  const router = express.Router();
  router.use(bearerGuard(adminToken, 'DASHBOARD_ADMIN_TOKEN'));
  router.use(jsonBody({ limit: '16kb' }));

  async function companyId(req: Request): Promise<string> {
    const id = z.uuid().safeParse(req.params.companyId);
    if (!id.success)
      throw new Problem(
        404,
        'company_not_found',
        'Company not found',
        `No company ${String(req.params.companyId)}.`,
      );
    // client-registry owns companies: a member only ever joins one that exists there.
    await d
      .registry({ company_id: id.data, member_id: 'operator', role: 'operator' })
      .call('GET', `/companies/${id.data}`);
    return id.data;
  }

  router.get('/companies/:companyId/members', async (req, res) => {
    const members = await d.access.members(await companyId(req));
    res.json({
      members: members.map((m) => ({
        member_id: m.member_id,
        email: m.email,
        name: m.name,
        role: m.role,
        active: m.has_password,
      })),
    });
  });

  router.post('/companies/:companyId/members', async (req, res) => {
    const company = await companyId(req);
    const body = parseOr422(schemas.member, req.body ?? {});
    const invited = await d.access.invite({
      companyId: company,
      email: body.email,
      role: body.role,
      ...(body.name ? { name: body.name } : {}),
      invitedBy: null,
    });
    await d.access.audit({
      companyId: company,
      memberId: null,
      action: 'member.invited',
      target: invited.memberId,
      detail: { by: 'operator' },
    });
    res.status(201).json({
      ...linkAnswer(d.publicUrl, invited),
      role: body.role,
      note: 'send the link to the person: it sets their password, works once, and expires',
    });
  });

  router.post('/companies/:companyId/members/reset', async (req, res) => {
    const company = await companyId(req);
    const body = parseOr422(schemas.reset, req.body ?? {});
    const link = await d.access.resetLink(company, { email: body.email });
    await d.access.audit({
      companyId: company,
      memberId: null,
      action: 'member.reset_link',
      target: link.memberId,
      detail: { by: 'operator' },
    });
    res.json(linkAnswer(d.publicUrl, link));
  });

  return router;
}
