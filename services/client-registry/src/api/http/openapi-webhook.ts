import { z } from 'zod';
import type { ZodOpenApiPathsObject } from 'zod-openapi';
import { MAX_WEBHOOK_ENDPOINTS } from '@mds/contracts';
import { jsonResponse, problemResponse } from '@mds/service-kit';
import { adminRequestSchemas as schemas } from './request-schemas.js';
import { endpointView, secrets, webhookView } from './openapi-views.js';
import { body, companyId, invalid, notFound, op } from './openapi-common.js';

// The webhook routes of the admin API's OpenAPI document (openapi.ts).

const endpointId = companyId.extend({
  endpointId: z.string().meta({ description: 'The endpoint id (`ep_...`).', example: 'ep_default' }),
});
const noEndpoint = problemResponse(
  'No such company (`company_not_found`), or no such endpoint (`webhook_endpoint_not_found`).',
);

/** The single-URL routes of versions before endpoints: they act on ep_default. */
export function webhookPaths(): ZodOpenApiPathsObject {
  return {
    '/companies/{companyId}/webhook': {
      put: op(
        'configureWebhook',
        'Webhook',
        'Set the webhook URL (of the endpoint ep_default, added the first time)',
        { '200': jsonResponse('The endpoint.', webhookView), '404': notFound, '422': invalid },
        { requestParams: { path: companyId }, requestBody: body(schemas.webhook) },
      ),
    },
    '/companies/{companyId}/webhook/secrets': {
      get: op(
        'getWebhookSecrets',
        'Webhook',
        'The signing secrets',
        {
          '200': jsonResponse('The secrets.', secrets),
          '404': problemResponse('No such company, or no webhook endpoint yet (`webhook_not_configured`).'),
        },
        { requestParams: { path: companyId } },
      ),
    },
    '/companies/{companyId}/webhook/rotate-secret': {
      post: op(
        'rotateWebhookSecret',
        'Webhook',
        'Rotate the signing secret (the old one signs too for a while)',
        {
          '200': jsonResponse(
            'The new secret and the endpoint.',
            z.object({ secret: z.string(), webhook: webhookView }),
          ),
          '404': notFound,
          '409': problemResponse('No webhook endpoint yet (`webhook_not_configured`).'),
        },
        { requestParams: { path: companyId } },
      ),
    },
    '/companies/{companyId}/webhook/enable': {
      post: op(
        'enableWebhook',
        'Webhook',
        'Enable the endpoint',
        {
          '200': jsonResponse('The endpoint.', webhookView),
          '404': notFound,
          '409': problemResponse('No webhook endpoint yet (`webhook_not_configured`).'),
        },
        { requestParams: { path: companyId } },
      ),
    },
    '/companies/{companyId}/webhook/disable': {
      post: op(
        'disableWebhook',
        'Webhook',
        'Disable the endpoint',
        {
          '200': jsonResponse('The endpoint.', webhookView),
          '404': notFound,
          '409': problemResponse('No webhook endpoint yet (`webhook_not_configured`).'),
        },
        { requestParams: { path: companyId } },
      ),
    },
  };
}

/** A company's webhook endpoints, each with its own settings, secrets and state. */
export function webhookEndpointPaths(): ZodOpenApiPathsObject {
  const path = '/companies/{companyId}/webhook/endpoints';
  const one = `${path}/{endpointId}`;
  const params = { requestParams: { path: endpointId } };
  const view = jsonResponse('The endpoint.', endpointView);
  return {
    [path]: {
      get: op(
        'listWebhookEndpoints',
        'Webhook',
        'The webhook endpoints (ep_default first, then in the order added)',
        {
          '200': jsonResponse('The endpoints.', z.object({ endpoints: z.array(endpointView) })),
          '404': notFound,
        },
        { requestParams: { path: companyId } },
      ),
      post: op(
        'addWebhookEndpoint',
        'Webhook',
        'Add an endpoint (its signing secret is made and shown)',
        {
          '201': jsonResponse(
            'The endpoint and its signing secret (also shown later by its secrets route).',
            z.object({
              endpoint: endpointView,
              secret: z.string().meta({ description: 'A `whsec_` signing secret.' }),
            }),
          ),
          '404': notFound,
          '409': problemResponse(
            `The company has ${MAX_WEBHOOK_ENDPOINTS} endpoints already (\`webhook_endpoint_limit\`).`,
          ),
          '422': problemResponse(
            'The body breaks its schema (`validation_failed`, with `errors`): an unknown event type, a URL that is not http(s) or carries a user name or password (`userinfo_not_allowed`), a description too long, a rate limit out of range.',
          ),
        },
        { requestParams: { path: companyId }, requestBody: body(schemas.webhookEndpoint) },
      ),
    },
    [one]: {
      get: op('getWebhookEndpoint', 'Webhook', 'An endpoint', { '200': view, '404': noEndpoint }, params),
      patch: op(
        'changeWebhookEndpoint',
        'Webhook',
        'Change what is given of its URL, description, event types, rate limit (null clears it); the secret stays',
        { '200': view, '404': noEndpoint, '422': invalid },
        { ...params, requestBody: body(schemas.webhookEndpointChange) },
      ),
      delete: op(
        'removeWebhookEndpoint',
        'Webhook',
        'Remove an endpoint and its secrets',
        {
          '204': { description: 'Removed: notifications already stored for it are still tried.' },
          '404': noEndpoint,
        },
        params,
      ),
    },
    [`${one}/secrets`]: {
      get: op(
        'getWebhookEndpointSecrets',
        'Webhook',
        "The endpoint's signing secrets",
        { '200': jsonResponse('The secrets.', secrets), '404': noEndpoint },
        params,
      ),
    },
    [`${one}/rotate-secret`]: {
      post: op(
        'rotateWebhookEndpointSecret',
        'Webhook',
        "Rotate the endpoint's signing secret (the old one signs too for a while)",
        {
          '200': jsonResponse(
            'The new secret and the endpoint.',
            z.object({ secret: z.string(), endpoint: endpointView }),
          ),
          '404': noEndpoint,
        },
        params,
      ),
    },
    [`${one}/enable`]: {
      post: op(
        'enableWebhookEndpoint',
        'Webhook',
        'Turn delivery to it on',
        { '200': view, '404': noEndpoint },
        params,
      ),
    },
    [`${one}/disable`]: {
      post: op(
        'disableWebhookEndpoint',
        'Webhook',
        'Turn delivery to it off',
        { '200': view, '404': noEndpoint, '422': invalid },
        {
          ...params,
          requestBody: { content: { 'application/json': { schema: schemas.webhookEndpointDisable } } },
        },
      ),
    },
  };
}
