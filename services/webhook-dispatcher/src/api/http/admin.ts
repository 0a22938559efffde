import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import type { KeyObject } from 'node:crypto';
import { WEBHOOK_ENDPOINT_ID_PATTERN } from '@mds/contracts';
import { redactedUrl } from '@mds/logging';
import { RegistryError } from '@mds/registry-client';
import { adminCallers, companyScope, jsonBody, mayActFor, parseOr422, Problem } from '@mds/service-kit';
import type { Endpoint } from '../../application/ports.js';
import type { TestDelivery, TestRefusal } from '../../application/test-event.js';
import type { DeliveryRecords, DeliveryView } from '../../adapters/db/store.js';
import { adminOpenApiDocument } from './openapi.js';

const WEBHOOK_ID = /^msg_[0-9a-f]{32}$/;
const deliveryId = z.union([z.uuid(), z.string().regex(WEBHOOK_ID)]);
const endpointId = z
  .string()
  .regex(WEBHOOK_ENDPOINT_ID_PATTERN, 'an endpoint id: ep_ and 22 letters or digits, or ep_default')
  .meta({ description: "One of the company's webhook endpoints.", example: 'ep_default' });
const testEventBody = z.strictObject({ endpoint_id: endpointId.optional() });
const recoverBody = z
  .strictObject({
    endpoint_id: endpointId.optional().meta({
      description: "Only this endpoint's deliveries; absent: those of every endpoint the company has.",
    }),
    since: z.iso.datetime({ offset: true, message: 'an ISO 8601 date-time, e.g. 2026-11-21T10:00:00Z' }),
    until: z.iso
      .datetime({ offset: true, message: 'an ISO 8601 date-time, e.g. 2026-11-21T12:00:00Z' })
      .optional(),
  })
  .refine((b) => !b.until || Date.parse(b.until) > Date.parse(b.since), {
    message: 'until must be after since',
    path: ['until'],
  });

/** The request bodies, as validated here and as the admin API's OpenAPI document describes them. */
export const adminRequestSchemas = { recover: recoverBody, testEvent: testEventBody };

const iso = (d: Date | null | undefined) => (d ? new Date(d).toISOString() : null);

/** Asks the registry; when it cannot be asked, a 503 the caller may retry. */
async function fromRegistry<T>(ask: () => Promise<T>): Promise<T> {
  try {
    return await ask();
  } catch (error) {
    if (!(error instanceof RegistryError)) throw error;
    throw new Problem(
      503,
      'registry_unavailable',
      'Registry unavailable',
      'client-registry, which keeps the webhook endpoints, could not be asked: try again shortly.',
    );
  }
}

const endpointNotFound = (companyId: string, id: string) =>
  new Problem(
    404,
    'webhook_endpoint_not_found',
    'Webhook endpoint not found',
    `Company ${companyId} has no webhook endpoint ${id}.`,
  );

const TEST_REFUSALS: Record<Exclude<TestRefusal, 'unknown_endpoint'>, Problem> = {
  no_endpoints: new Problem(
    409,
    'webhook_not_configured',
    'No webhook endpoint',
    'The company has no webhook endpoint: add one first.',
  ),
  endpoint_required: new Problem(
    422,
    'webhook_endpoint_required',
    'Which endpoint?',
    'The company has several webhook endpoints: name one with {"endpoint_id": "ep_..."}.',
  ),
};

/** What the admin API reads and does. */
export interface AdminOptions {
  store: DeliveryRecords;
  adminToken: string;
  /** Keys verifying the dashboard's assertions (it acts for one company at a time); none: operator only. */
  dashboardKeys: readonly KeyObject[];
  now: () => Date;
  poke: () => void;
  /** The company's endpoints as the dispatcher knows them (memory): the URL a delivery goes to. */
  endpoints: (companyId: string) => Promise<Endpoint[]>;
  /** The company's endpoints read afresh from the registry (recover checks the endpoint named). */
  freshEndpoints: (companyId: string) => Promise<Endpoint[]>;
  /** Sends a signed test notification to one of the company's endpoints now. */
  sendTest: (companyId: string, endpointId: string | undefined) => Promise<TestDelivery | TestRefusal>;
}

/** The delivery a path names, by its webhook-id or the event_id it is about; else 404. */
function idOf(req: Request): string {
  const id = deliveryId.safeParse(req.params.id);
  if (!id.success) {
    throw new Problem(
      404,
      'delivery_not_found',
      'Delivery not found',
      'Name a delivery by its webhook-id (msg_ and 32 hex digits) or by the event_id it is about (a UUID).',
    );
  }
  return id.data;
}

/** The deliveries a path names that the caller may see: another company's is as unknown as a missing one. */
async function found(o: AdminOptions, req: Request, res: Response): Promise<DeliveryView[]> {
  const deliveries = (await o.store.find(idOf(req))).filter((d) => mayActFor(res, d.company_id));
  if (deliveries.length === 0)
    throw new Problem(
      404,
      'delivery_not_found',
      'Delivery not found',
      `No webhook delivery for ${String(req.params.id)}.`,
    );
  return deliveries;
}

/** Where a delivery goes now (without the query, which may hold the receiver's token); null once removed. */
async function urlOf(o: AdminOptions, companyId: string, id: string): Promise<string | null> {
  const endpoint = (await fromRegistry(() => o.endpoints(companyId))).find((e) => e.endpointId === id);
  return endpoint ? redactedUrl(endpoint.url) : null;
}

const deliveryJson = (d: DeliveryView, url: string | null) => ({
  webhook_id: d.webhook_id,
  endpoint_id: d.endpoint_id,
  url,
  kind: d.kind,
  event_id: d.subject_id,
  company_id: d.company_id,
  status: d.status,
  attempts: d.attempts,
  next_attempt_at: iso(d.next_attempt_at),
  last_status_code: d.last_status_code,
  last_error: d.last_error,
  created_at: iso(d.created_at),
  finished_at: iso(d.finished_at),
  payload: JSON.parse(d.body) as unknown,
  attempt_log: d.attempt_log,
});

/** GET /deliveries/:id (the attempt log) and POST /deliveries/:id/resend. */
function deliveryRoutes(router: Router, o: AdminOptions): void {
  router.get('/deliveries/:id', async (req, res) => {
    const deliveries = await found(o, req, res);
    const urls = await Promise.all(deliveries.map((d) => urlOf(o, d.company_id, d.endpoint_id)));
    res.json({ deliveries: deliveries.map((d, i) => deliveryJson(d, urls[i] ?? null)) });
  });

  router.post('/deliveries/:id/resend', async (req, res) => {
    const deliveries = await found(o, req, res);
    const now = o.now();
    for (const d of deliveries) await o.store.resend(d.webhook_id, now);
    o.poke();
    res.status(202).json({ resent: deliveries.map((d) => d.webhook_id), next_attempt_at: now.toISOString() });
  });
}

function companyOf(req: Request): string {
  const companyId = z.uuid().safeParse(req.params.companyId);
  if (!companyId.success)
    throw new Problem(
      404,
      'company_not_found',
      'Company not found',
      `No company ${String(req.params.companyId)}.`,
    );
  return companyId.data;
}

/** POST /companies/:companyId/test-event and /recover. */
function companyRoutes(router: Router, o: AdminOptions): void {
  router.post('/companies/:companyId/test-event', async (req, res) => {
    const companyId = companyOf(req);
    const body = parseOr422(testEventBody, req.body ?? {});
    const sent = await fromRegistry(() => o.sendTest(companyId, body.endpoint_id));
    if (sent === 'unknown_endpoint') throw endpointNotFound(companyId, body.endpoint_id!);
    if (typeof sent === 'string') throw TEST_REFUSALS[sent];
    res.json(sent);
  });

  router.post('/companies/:companyId/recover', async (req, res) => {
    const companyId = companyOf(req);
    const body = parseOr422(recoverBody, req.body ?? {});
    const endpoints = (await fromRegistry(() => o.freshEndpoints(companyId))).map((e) => e.endpointId);
    if (body.endpoint_id && !endpoints.includes(body.endpoint_id))
      throw endpointNotFound(companyId, body.endpoint_id);
    const now = o.now();
    const since = new Date(body.since);
    const until = body.until ? new Date(body.until) : now;
    const ids = body.endpoint_id ? [body.endpoint_id] : endpoints;
    const recovered = await o.store.recover(companyId, ids, since, until, now);
    o.poke();
    res.status(202).json({ recovered, since: since.toISOString(), until: until.toISOString() });
  });
}

/**
 * The dispatcher's admin API: the attempt log of a notification (by its webhook id or the public event_id it is
 * about), resend of one, recovery of every failed delivery of a company since a time, and a signed test
 * notification sent to a company's endpoint on the spot.
 */
export function adminRouter(o: AdminOptions): Router {
  const router = express.Router();
  // The API's own description is public: it holds no data.
  const document = adminOpenApiDocument();
  router.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  // The operator sees every company's deliveries; the dashboard only those of the company it acts for.
  router.use(
    adminCallers({
      operatorToken: o.adminToken,
      operatorSetting: 'DISPATCHER_ADMIN_TOKEN',
      audience: 'webhook-dispatcher',
      dashboardKeys: o.dashboardKeys,
    }),
  );
  router.param('companyId', companyScope);
  router.use(jsonBody({ limit: '16kb' }));
  deliveryRoutes(router, o);
  companyRoutes(router, o);
  return router;
}
