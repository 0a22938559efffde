import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createLogger } from '@mds/logging';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Access } from '../../application/access.js';
import { alreadyAudited, auditEveryChange, noticedAudit } from './audit-guard.js';

type Row = Parameters<Access['audit']>[0];
const rows: Row[] = [];
/** The audit trail in memory, behind the same method the routes call. */
const trail = {
  audit: async (entry: Row) => {
    await new Promise((r) => setTimeout(r, 5));
    rows.push(entry);
  },
} as unknown as Access;
const member = { company_id: 'c1', member_id: 'm1', role: 'owner' };

let server: Server;
let base = '';
beforeAll(async () => {
  const access = noticedAudit(trail);
  const app = express();
  app.use((req, res, next) => {
    if (req.header('x-signed-in')) res.locals.session = { member, csrf: '', token: '' };
    next();
  });
  // As the dashboard mounts it: in the /api router, before the routes.
  const router = express.Router();
  router.use(auditEveryChange(trail, createLogger({ service: 'test', level: 'silent' })));
  router.post('/things/:id/audited', async (req, res) => {
    // The route's own row, written after an await: the request is still known as audited.
    await new Promise((r) => setTimeout(r, 5));
    await access.audit({
      companyId: 'c1',
      memberId: 'm1',
      action: 'thing.done',
      target: String(req.params.id),
    });
    res.status(204).end();
  });
  router.post('/things/:id/forgotten', (_req, res) => {
    res.status(204).end();
  });
  router.post('/things/:id/replayed', (_req, res) => {
    alreadyAudited();
    res.status(202).end();
  });
  router.post('/things/:id/refused', (_req, res) => {
    res.status(422).end();
  });
  router.get('/things/:id', (_req, res) => {
    res.json({});
  });
  router.delete('/session', (_req, res) => {
    res.status(204).end();
  });
  app.use('/api', router);
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
});

async function call(method: string, path: string, signedIn = true): Promise<Row[]> {
  rows.length = 0;
  await fetch(`${base}${path}`, { method, headers: signedIn ? { 'x-signed-in': '1' } : {} });
  // A fallback row is written once the answer is out.
  await new Promise((r) => setTimeout(r, 50));
  return [...rows];
}

describe('every change a member makes leaves a row in the audit trail', () => {
  it("a route's own row, and no other", async () => {
    expect(await call('POST', '/things/42/audited')).toEqual([
      { companyId: 'c1', memberId: 'm1', action: 'thing.done', target: '42' },
    ]);
  });

  it('a route that forgot its row: one naming the request, by its pattern (no ids)', async () => {
    expect(await call('POST', '/things/42/forgotten')).toEqual([
      { companyId: 'c1', memberId: 'm1', action: 'request', target: 'POST /things/:id/forgotten' },
    ]);
  });

  it('none for a read, a refusal, a replayed answer, signing out, or no member', async () => {
    expect(await call('GET', '/things/42')).toEqual([]);
    expect(await call('POST', '/things/42/refused')).toEqual([]);
    expect(await call('POST', '/things/42/replayed')).toEqual([]);
    expect(await call('DELETE', '/session')).toEqual([]);
    expect(await call('POST', '/things/42/forgotten', false)).toEqual([]);
  });
});
