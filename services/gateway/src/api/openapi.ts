import { messageErrorCodes, phoneChangeErrorCodes } from '@mds/contracts';
import { z } from 'zod';
import { MAX_BUTTONS, TEXT_LIMIT } from './schemas.js';
import './schemas.js';

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });
const json = (id: string) => ({ 'application/json': { schema: ref(id) } });
const problem = (description: string, headers?: Record<string, unknown>) => ({
  description,
  content: { 'application/problem+json': { schema: ref('Problem') } },
  ...(headers ? { headers } : {}),
});
const retryAfter = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
};

function operation(o: {
  summary: string;
  description: string;
  request: string;
  accepted: string;
  acceptedDescription: string;
}) {
  return {
    post: {
      summary: o.summary,
      description: o.description,
      security: [{ ApiKey: [] }],
      parameters: [
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            'Makes retries safe: the same key with the same body within 24 h returns the first response (same event_id) and records nothing new; with another body 422; while the first is in progress 409.',
          schema: { type: 'string', maxLength: 255 },
        },
        {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description: 'Echoed back; generated when absent.',
          schema: { type: 'string' },
        },
      ],
      requestBody: { required: true, content: json(o.request) },
      responses: {
        '202': {
          description: o.acceptedDescription,
          content: json(o.accepted),
          headers: {
            RateLimit: {
              description: 'Remaining requests (draft-ietf-httpapi-ratelimit-headers).',
              schema: { type: 'string' },
            },
            'RateLimit-Policy': { description: 'The limits that apply.', schema: { type: 'string' } },
          },
        },
        '400': problem(
          'Malformed JSON (`malformed_json`) or an invalid Idempotency-Key header (`invalid_idempotency_key`).',
        ),
        '401': { description: 'Missing, unknown or revoked X-API-Key.', content: json('Unauthorized') },
        '409': problem(
          'A request with the same Idempotency-Key is still in progress (`idempotency_request_in_progress`).',
          retryAfter,
        ),
        '413': problem('The body is larger than 64 KiB (`body_too_large`).'),
        '415': problem('The body is not sent as `application/json` (`unsupported_media_type`).'),
        '422': problem(
          'Validation failed (`validation_failed`, with `errors`), or the Idempotency-Key was used with another body (`idempotency_key_reused`).',
        ),
        '429': problem('Too many requests for the API key or the company (`rate_limited`).', retryAfter),
        '500': problem('Server-side error (`internal_error`).'),
        '503': problem(
          'The event log (`broker_unavailable`) or the key check (`auth_unavailable`) is unavailable; nothing was acknowledged. Retry with the same Idempotency-Key.',
          retryAfter,
        ),
      },
    },
  };
}

/** GET /api/v1/events/{event_id}: the read API. */
function readOperation() {
  return {
    get: {
      summary: 'State of a message or request',
      description: [
        'The current state of what an `event_id` from a 202 names: a message (`new`, `sent`, `failed`, with `error_code` and `error_description` when failed), a change_phone (`new`, `changed`, `rejected`) or a client check (`new`, `checked`, with the bots that reach the client), and the history of its events.',
        '',
        'It is a read model built from the event log: an id becomes readable a moment after its 202 (normally well under a second), and answers 404 until then. An id of another company answers exactly as an unknown one.',
      ].join('\n'),
      security: [{ ApiKey: [] }],
      parameters: [
        {
          name: 'event_id',
          in: 'path',
          required: true,
          description: 'The `event_id` of a 202 answer.',
          schema: { type: 'string' },
        },
        {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description: 'Echoed back; generated when absent.',
          schema: { type: 'string' },
        },
      ],
      responses: {
        '200': { description: 'The state and its history.', content: json('EventState') },
        '401': { description: 'Missing, unknown or revoked X-API-Key.', content: json('Unauthorized') },
        '404': problem(
          "No message or request of your company has this event_id (`not_found`): unknown, another company's, or not yet in the read model.",
        ),
        '429': problem('Too many reads for the API key or the company (`rate_limited`).', retryAfter),
        '500': problem('Server-side error (`internal_error`).'),
        '503': problem('API keys cannot be checked right now (`auth_unavailable`).', retryAfter),
      },
    },
  };
}

/** OpenAPI 3.1 of the public API, with schemas generated from the same zod schemas that validate requests. */
export function openApiDocument(serverUrl = '/'): Record<string, unknown> {
  const { schemas } = z.toJSONSchema(z.globalRegistry, {
    io: 'input',
    target: 'draft-2020-12',
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
  }) as { schemas: Record<string, Record<string, unknown>> };
  const components = Object.fromEntries(
    Object.entries(schemas).map(([id, schema]) => {
      const { $schema: _drop, $id: _id, ...rest } = schema;
      return [id, rest];
    }),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'Messenger Delivery Service',
      version: '1.0.0',
      description: [
        "Send a text message with optional link buttons to a person, by phone number, through Telegram or MAX bots; change a person's phone number; check whether a person is reachable. Every call is answered at once with an `event_id`; results arrive on the company's webhook.",
        '',
        `Limits: at most ${MAX_BUTTONS} buttons; text at most ${TEXT_LIMIT.telegram} characters for Telegram and ${TEXT_LIMIT.max} for MAX. Unknown fields are refused (422, code \`unknown_field\`).`,
        '',
        `Message error codes (webhook \`error_code\`): ${Object.keys(messageErrorCodes).join(', ')}. change_phone error codes: ${Object.keys(phoneChangeErrorCodes).join(', ')}.`,
      ].join('\n'),
    },
    servers: [{ url: serverUrl }],
    components: {
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } },
      schemas: components,
    },
    paths: {
      '/api/v1/send': operation({
        summary: 'Send a message',
        description:
          'Queues a message to a person by phone number through a messenger. The result comes as a `message.status` webhook.',
        request: 'SendRequest',
        accepted: 'SendAccepted',
        acceptedDescription: 'Accepted into the processing queue; state `new`.',
      }),
      '/api/v1/change_phone': operation({
        summary: "Change a client's phone number",
        description:
          'Moves every bot link of `old_phone` to `new_phone`; the old number then resolves to nothing. The outcome comes as a `client.phone_changed` webhook.',
        request: 'ChangePhoneRequest',
        accepted: 'Accepted',
        acceptedDescription: 'Accepted into the processing queue.',
      }),
      '/api/v1/client/check': operation({
        summary: 'Check a client',
        description:
          'Whether the number belongs to a client of the company and which bots reach them. The result comes as a `client.check` webhook.',
        request: 'ClientCheckRequest',
        accepted: 'Accepted',
        acceptedDescription: 'Accepted into the processing queue.',
      }),
      '/api/v1/events/{event_id}': readOperation(),
    },
  };
}

const escape = (text: string) =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** A readable, self-contained page of the OpenAPI document (no scripts or assets from elsewhere). */
export function docsPage(doc: Record<string, unknown>): string {
  const info = doc.info as { title: string; description: string };
  const schemas = (
    doc.components as {
      schemas: Record<
        string,
        { properties?: Record<string, { description?: string; type?: unknown }>; required?: string[] }
      >;
    }
  ).schemas;
  type Operation = {
    summary: string;
    description: string;
    requestBody?: { content: { 'application/json': { schema: { $ref: string } } } };
    responses: Record<
      string,
      { description: string; content?: Record<string, { schema: { $ref: string } }> }
    >;
  };
  const paths = doc.paths as Record<string, Record<string, Operation>>;
  const operations = Object.entries(paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ path, method: method.toUpperCase(), op })),
  );
  const sections = operations.map(({ path, method, op: post }) => {
    // The fields of the request body, or for a read the fields of its answer.
    const bodyRef =
      post.requestBody?.content['application/json'].schema.$ref ??
      post.responses['200']?.content?.['application/json']?.schema.$ref ??
      '';
    const requestId = bodyRef.split('/').pop()!;
    const fields = Object.entries(schemas[requestId]?.properties ?? {})
      .map(
        ([name, p]) =>
          `<tr><td><code>${name}</code></td><td>${(schemas[requestId]?.required ?? []).includes(name) ? 'yes' : 'no'}</td><td>${escape(p.description ?? '')}</td></tr>`,
      )
      .join('');
    const responses = Object.entries(post.responses)
      .map(([status, r]) => `<tr><td>${status}</td><td>${escape(r.description)}</td></tr>`)
      .join('');
    return `<section><h2><code>${method} ${path}</code> — ${escape(post.summary)}</h2><p>${escape(post.description)}</p>
<h3>${post.requestBody ? 'Body' : 'Answer'}</h3><table><tr><th>field</th><th>required</th><th>meaning</th></tr>${fields}</table>
<h3>Responses</h3><table><tr><th>status</th><th>meaning</th></tr>${responses}</table></section>`;
  });
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(info.title)} API</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#222}table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}code{background:#f4f4f4;padding:0 .2rem}section{margin:2rem 0}</style>
</head><body><h1>${escape(info.title)}</h1><p>${escape(info.description).replaceAll('\n', '<br>')}</p>
<p>Authenticate every call with the <code>X-API-Key</code> header. Machine-readable document: <a href="openapi.json">openapi.json</a> (OpenAPI 3.1).</p>
${sections.join('\n')}</body></html>`;
}
