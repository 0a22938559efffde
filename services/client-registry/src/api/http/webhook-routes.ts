import type { Request, Router } from 'express';
import { LEGACY_WEBHOOK_ENDPOINT_ID, WEBHOOK_ENDPOINT_ID_PATTERN } from '@mds/contracts';
import { parseOr422, Problem } from '@mds/service-kit';
import type { AccountState, WebhookEndpointRecord, WebhookEndpointSettings } from '../../domain/accounts.js';
import { findEndpoint } from '../../domain/webhook-endpoints.js';
import type { AdminDeps, Lookups } from './admin.js';
import { adminRequestSchemas as schemas } from './request-schemas.js';

/** An endpoint as the admin API shows it: its secrets by id, never their values. */
export function endpointView(e: WebhookEndpointRecord, now = new Date()) {
  return {
    id: e.endpointId,
    url: e.url,
    description: e.description,
    event_types: e.eventTypes,
    enabled: e.enabled,
    disabled_reason: e.disabledReason ?? null,
    disabled_automatically: Boolean(e.disabledAutomatically),
    rate_limit_per_second: e.rateLimitPerSecond ?? null,
    secrets: e.secrets
      .filter((s) => !s.expiresAt || s.expiresAt > now.toISOString())
      // The current one first, as ListWebhookEndpoints and the secrets call give them.
      .sort((a, b) => Number(Boolean(a.expiresAt)) - Number(Boolean(b.expiresAt)))
      .map((s) => ({ secret_id: s.secretId, current: !s.expiresAt, expires_at: s.expiresAt ?? null })),
  };
}

/** ep_default as the single-URL API showed the company's webhook before endpoints (null: there is none). */
export function legacyWebhookView(state: AccountState) {
  const e = findEndpoint(state.webhookEndpoints, LEGACY_WEBHOOK_ENDPOINT_ID);
  return e
    ? {
        url: e.url,
        enabled: e.enabled,
        disabled_reason: e.disabledReason ?? null,
        secrets: e.secrets.map((s) => ({
          secret_id: s.secretId,
          created_at: s.createdAt,
          expires_at: s.expiresAt ?? null,
        })),
      }
    : null;
}

const notConfigured = () =>
  new Problem(404, 'webhook_not_configured', 'No webhook endpoint', 'Configure the webhook URL first.');

/** The signing secrets valid now, opened (current first). */
const secretsView = (o: AdminDeps, state: AccountState, endpoint: WebhookEndpointRecord) => ({
  secrets: o.accounts
    .signingSecrets(state, endpoint)
    .map((s) => ({ secret_id: s.secretId, secret: s.secret, expires_at: s.expiresAt ?? null })),
});

/** The single-URL API of versions before endpoints: it acts on ep_default. */
export function webhookRoutes(router: Router, o: AdminDeps, { companyId, account }: Lookups): void {
  router.put('/companies/:companyId/webhook', async (req, res) => {
    const body = parseOr422(schemas.webhook, req.body);
    await o.accounts.configureWebhook(companyId(req), body.url);
    res.json(legacyWebhookView(await account(req)));
  });
  router.get('/companies/:companyId/webhook/secrets', async (req, res) => {
    const state = await account(req);
    const endpoint = findEndpoint(state.webhookEndpoints, LEGACY_WEBHOOK_ENDPOINT_ID);
    if (!endpoint) throw notConfigured();
    res.json(secretsView(o, state, endpoint));
  });
  router.post('/companies/:companyId/webhook/rotate-secret', async (req, res) => {
    const rotated = await o.accounts.rotateWebhookSecret(companyId(req));
    res.json({ secret: rotated.secret, webhook: legacyWebhookView(await account(req)) });
  });
  for (const action of ['enable', 'disable'] as const) {
    router.post(`/companies/:companyId/webhook/${action}`, async (req, res) => {
      await o.accounts.setWebhookEnabled(companyId(req), action === 'enable');
      res.json(legacyWebhookView(await account(req)));
    });
  }
}

/** The settings a request body names, as the domain takes them (a null rate limit clears it). */
function settingsOf(body: {
  url?: string | undefined;
  description?: string | undefined;
  event_types?: string[] | undefined;
  rate_limit_per_second?: number | null | undefined;
}): Partial<WebhookEndpointSettings> {
  return {
    ...(body.url === undefined ? {} : { url: body.url }),
    ...(body.description === undefined ? {} : { description: body.description }),
    ...(body.event_types === undefined ? {} : { eventTypes: body.event_types }),
    ...(body.rate_limit_per_second === undefined
      ? {}
      : { rateLimitPerSecond: body.rate_limit_per_second ?? undefined }),
  };
}

/** A company's webhook endpoints (0 to MAX_WEBHOOK_ENDPOINTS), each with its own settings and secrets. */
export function webhookEndpointRoutes(router: Router, o: AdminDeps, { companyId, account }: Lookups): void {
  const base = '/companies/:companyId/webhook/endpoints';
  const endpointIdOf = (req: Request) => {
    const id = String(req.params.endpointId);
    if (!WEBHOOK_ENDPOINT_ID_PATTERN.test(id))
      throw new Problem(
        404,
        'webhook_endpoint_not_found',
        'Webhook endpoint not found',
        `No webhook endpoint ${id}.`,
      );
    return id;
  };
  /** The company's account and the endpoint named in the path (404 when either is not there). */
  const endpointOf = async (req: Request) => {
    const endpointId = endpointIdOf(req);
    const state = await account(req);
    const endpoint = findEndpoint(state.webhookEndpoints, endpointId);
    if (!endpoint)
      throw new Problem(
        404,
        'webhook_endpoint_not_found',
        'Webhook endpoint not found',
        `No webhook endpoint ${endpointId}.`,
      );
    return { state, endpoint };
  };

  router.get(base, async (req, res) => {
    const state = await account(req);
    res.json({ endpoints: state.webhookEndpoints.map((e) => endpointView(e)) });
  });
  router.post(base, async (req, res) => {
    const body = parseOr422(schemas.webhookEndpoint, req.body ?? {});
    const settings = { url: body.url, description: body.description, eventTypes: body.event_types };
    const added = await o.accounts.addWebhookEndpoint(
      companyId(req),
      {
        ...settings,
        ...(body.rate_limit_per_second ? { rateLimitPerSecond: body.rate_limit_per_second } : {}),
      },
      body.enabled,
    );
    res.status(201).json({ endpoint: endpointView(added.endpoint), secret: added.secret });
  });
  router.get(`${base}/:endpointId`, async (req, res) => {
    res.json(endpointView((await endpointOf(req)).endpoint));
  });
  router.patch(`${base}/:endpointId`, async (req, res) => {
    const endpointId = endpointIdOf(req);
    const body = parseOr422(schemas.webhookEndpointChange, req.body ?? {});
    res.json(
      endpointView(await o.accounts.changeWebhookEndpoint(companyId(req), endpointId, settingsOf(body))),
    );
  });
  router.delete(`${base}/:endpointId`, async (req, res) => {
    await o.accounts.removeWebhookEndpoint(companyId(req), endpointIdOf(req));
    res.status(204).end();
  });
  router.get(`${base}/:endpointId/secrets`, async (req, res) => {
    const { state, endpoint } = await endpointOf(req);
    res.json(secretsView(o, state, endpoint));
  });
  router.post(`${base}/:endpointId/rotate-secret`, async (req, res) => {
    const rotated = await o.accounts.rotateWebhookSecret(companyId(req), endpointIdOf(req));
    res.json({ secret: rotated.secret, endpoint: endpointView(rotated.endpoint) });
  });
  router.post(`${base}/:endpointId/enable`, async (req, res) => {
    const endpointId = endpointIdOf(req);
    const state = await o.accounts.setWebhookEnabled(companyId(req), true, { endpointId });
    res.json(endpointView(findEndpoint(state.webhookEndpoints, endpointId)!));
  });
  router.post(`${base}/:endpointId/disable`, async (req, res) => {
    const endpointId = endpointIdOf(req);
    const body = parseOr422(schemas.webhookEndpointDisable, req.body ?? {});
    const state = await o.accounts.setWebhookEnabled(companyId(req), false, {
      endpointId,
      reason: body.reason,
    });
    res.json(endpointView(findEndpoint(state.webhookEndpoints, endpointId)!));
  });
}
