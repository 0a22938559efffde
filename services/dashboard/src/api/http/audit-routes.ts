import express, { type Router } from 'express';
import { z } from 'zod';
import { parseOr422 } from '@mds/service-kit';
import { auditTrail } from '../../adapters/db/audit-trail.js';
import type { ApiDeps } from './deps.js';
import { memberWith } from './session.js';

const auditQuery = z.strictObject({
  cursor: z
    .string()
    .regex(/^[1-9]\d{0,18}$/, 'a cursor from a previous page')
    .optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/** The company's audit trail (what its members did here, and when), for its owners. */
export function auditRouter(d: ApiDeps): Router {
  const router = express.Router();
  router.get('/audit', async (req, res) => {
    const m = memberWith(res, 'read-audit');
    const q = parseOr422(auditQuery, req.query);
    const page = await auditTrail(d.db, m.company_id, { before: q.cursor, limit: q.limit });
    res.json({ entries: page.entries, next_cursor: page.nextCursor });
  });
  return router;
}
