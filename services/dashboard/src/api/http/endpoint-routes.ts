import type { Request, Router } from 'express';
import { z } from 'zod';
import {
  MAX_ENDPOINT_DESCRIPTION_LENGTH,
  MAX_ENDPOINT_RATE_LIMIT,
  MAX_WEBHOOK_ENDPOINTS,
  WEBHOOK_ENDPOINT_ID_PATTERN,
  WEBHOOK_EVENT_TYPES,
} from '@mds/contracts';
import { redactedUrl } from '@mds/logging';
import { parseOr422, Problem, refuseInvalidCharacters } from '@mds/service-kit';
import { endpointHealth, type EndpointHealth } from '../../adapters/db/queries.js';
import type { Member } from '../../application/access.js';
import { can } from '../../domain/roles.js';
import type { EndpointView, EndpointWithHealth } from '../../domain/views.js';
import type { CompanyContext } from './company-context.js';
import type { ApiDeps } from './deps.js';
import { memberWith } from './session.js';

const url = z.url({ protocol: /^https?$/, message: 'an http(s) URL' }).max(2048);
const description = z
  .string()
  .superRefine(refuseInvalidCharacters)
  .trim()
  .max(MAX_ENDPOINT_DESCRIPTION_LENGTH);
const eventTypes = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .refine((types) => new Set(types).size === types.length, 'each type once');
const rateLimit = z.number().int().min(1).max(MAX_ENDPOINT_RATE_LIMIT).nullable();

const schemas = {
  add: z.strictObject({
    url,
    description: description.optional(),
    event_types: eventTypes.optional(),
    rate_limit_per_second: rateLimit.optional(),
  }),
  change: z
    .strictObject({
      url: url.optional(),
      description: description.optional(),
      event_types: eventTypes.optional(),
      // null: no limit of its own any more.
      rate_limit_per_second: rateLimit.optional(),
    })
    .refine(
      (b) => Object.keys(b).length > 0,
      'at least one of url, description, event_types, rate_limit_per_second',
    ),
  disable: z.strictObject({
    reason: z.string().superRefine(refuseInvalidCharacters).trim().max(200).optional(),
  }),
};

const NO_HEALTH: EndpointHealth = {
  attempts_24h: 0,
  succeeded_24h: 0,
  success_rate_24h: null,
  last_failure: null,
};

function endpointIdParam(req: Request): string {
  const id = String(req.params.endpointId);
  if (!WEBHOOK_ENDPOINT_ID_PATTERN.test(id))
    throw new Problem(
      404,
      'webhook_endpoint_not_found',
      'Endpoint not found',
      `No endpoint ${id} in this company.`,
    );
  return id;
}

/**
 * The company's webhook endpoints (client-registry's), each with its health from the dashboard's read model of
 * attempts; test events through webhook-dispatcher. Owners and developers manage, others read.
 */
export function endpointRoutes(router: Router, d: ApiDeps, c: CompanyContext): void {
  const { path, audit } = c;
  const endpoints = (m: Member, rest = '') => path(m, `/webhook/endpoints${rest}`);
  // A URL's query may hold the receiver's token: only those who may change the endpoint see it whole.
  const shown = (m: Member, e: EndpointView): EndpointView =>
    can(m.role, 'manage-webhook') ? e : { ...e, url: redactedUrl(e.url) };

  router.get('/webhook/endpoints', async (_req, res) => {
    const m = memberWith(res, 'read');
    const [listed, health] = await Promise.all([
      d.registry(m).call<{ endpoints: EndpointView[] }>('GET', endpoints(m)),
      endpointHealth(d.db, m.company_id, d.now()),
    ]);
    const withHealth = listed.endpoints.map((e): EndpointWithHealth => ({
      ...shown(m, e),
      health: healthView(health.get(e.id) ?? NO_HEALTH),
    }));
    // The rules the page's form follows come from here, so the web application never spells them again.
    res.json({
      endpoints: withHealth,
      event_types: WEBHOOK_EVENT_TYPES,
      limits: {
        endpoints: MAX_WEBHOOK_ENDPOINTS,
        description_length: MAX_ENDPOINT_DESCRIPTION_LENGTH,
        rate_limit_per_second: MAX_ENDPOINT_RATE_LIMIT,
      },
    });
  });

  router.post('/webhook/endpoints', async (req, res) => {
    const m = memberWith(res, 'manage-webhook');
    const body = parseOr422(schemas.add, req.body);
    const added = await d
      .registry(m)
      .call<{ endpoint: EndpointView; secret: string }>('POST', endpoints(m), body);
    await audit(m, 'webhook.endpoint_added', added.endpoint.id, settingsOf(body));
    res.status(201).json(added);
  });

  router.patch('/webhook/endpoints/:endpointId', async (req, res) => {
    const m = memberWith(res, 'manage-webhook');
    const id = endpointIdParam(req);
    const body = parseOr422(schemas.change, req.body);
    const endpoint = await d.registry(m).call<EndpointView>('PATCH', endpoints(m, `/${id}`), body);
    await audit(m, 'webhook.endpoint_changed', id, settingsOf(body));
    res.json({ endpoint });
  });

  router.delete('/webhook/endpoints/:endpointId', async (req, res) => {
    const m = memberWith(res, 'manage-webhook');
    const id = endpointIdParam(req);
    await d.registry(m).call('DELETE', endpoints(m, `/${id}`));
    await audit(m, 'webhook.endpoint_removed', id);
    res.status(204).end();
  });

  for (const action of ['enable', 'disable'] as const) {
    router.post(`/webhook/endpoints/:endpointId/${action}`, async (req, res) => {
      const m = memberWith(res, 'manage-webhook');
      const id = endpointIdParam(req);
      const body = action === 'disable' ? parseOr422(schemas.disable, req.body ?? {}) : undefined;
      const endpoint = await d.registry(m).call<EndpointView>('POST', endpoints(m, `/${id}/${action}`), body);
      await audit(m, `webhook.endpoint_${action}d`, id, body);
      res.json({ endpoint });
    });
  }

  // A POST, not a GET: revealing is an action, kept in the audit trail.
  router.post('/webhook/endpoints/:endpointId/secrets', async (req, res) => {
    const m = memberWith(res, 'reveal-secrets');
    const id = endpointIdParam(req);
    const secrets = await d.registry(m).call('GET', endpoints(m, `/${id}/secrets`));
    await audit(m, 'webhook.endpoint_secrets_revealed', id);
    res.json(secrets);
  });

  router.post('/webhook/endpoints/:endpointId/rotate', async (req, res) => {
    const m = memberWith(res, 'manage-webhook');
    const id = endpointIdParam(req);
    const rotated = await d.registry(m).call('POST', endpoints(m, `/${id}/rotate-secret`));
    await audit(m, 'webhook.endpoint_secret_rotated', id);
    res.json(rotated);
  });

  router.post('/webhook/endpoints/:endpointId/test', async (req, res) => {
    const m = memberWith(res, 'manage-webhook');
    const id = endpointIdParam(req);
    const tested = await d.dispatcher(m).call('POST', path(m, '/test-event'), { endpoint_id: id });
    await audit(m, 'webhook.endpoint_tested', id);
    res.json(tested);
  });
}

/** What the audit trail keeps of an endpoint's settings: its URL without a token its query may hold. */
function settingsOf(body: { url?: string | undefined }): Record<string, unknown> {
  return body.url === undefined ? body : { ...body, url: redactedUrl(body.url) };
}

function healthView(h: EndpointHealth): EndpointWithHealth['health'] {
  return {
    ...h,
    last_failure: h.last_failure ? { ...h.last_failure, at: h.last_failure.at.toISOString() } : null,
  };
}
