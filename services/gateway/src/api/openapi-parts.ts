// The pieces of the public API's OpenAPI document that its operations share: headers, problem answers,
// the 202 answers and code samples of an accepting operation, and a webhook's description.
import { INVALID_CHARACTERS_RULE } from '@mds/contracts';
import { webhookHeadersSchema } from '@mds/contracts/webhooks';
import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiResponsesObject } from 'zod-openapi';
import { IDEMPOTENCY_KEY_PATTERN, problemSchema, unauthorizedSchema } from './schemas.js';

export const EVENT_ID = '0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10';
const REQUEST_ID = '7c1e5a2b-9d4f-4e3a-8b6c-2f1a0e9d8c7b';

export const requestIdHeader = z.string().meta({
  description:
    "Echoes the caller's X-Request-Id when it is 1 to 128 of `A-Za-z0-9_.:-`; a new UUID otherwise.",
  example: REQUEST_ID,
});
export const retryAfter = z
  .string()
  .regex(/^\d+$/)
  .meta({ description: 'Seconds to wait before retrying.', example: '1' });
export const rateLimitHeaders = {
  RateLimit: z.string().meta({
    description:
      'What is left of the tightest limit (draft-ietf-httpapi-ratelimit-headers): `"<category>";r=<remaining>;t=<seconds>`.',
    example: '"send";r=199;t=2',
  }),
  'RateLimit-Policy': z.string().meta({
    description:
      'The limits that apply to the key and to the company, per category (`send`, `other`, `read`).',
    example: '"send-key";q=200;w=2, "send-company";q=400;w=2',
  }),
};

export const requestHeaders = z.object({
  'X-Request-Id': z.string().optional().meta({
    description:
      'Your id for this request, echoed on the answer and in problem bodies; one is made when absent.',
  }),
});
const idempotencyHeader = z.object({
  'Idempotency-Key': z.string().regex(IDEMPOTENCY_KEY_PATTERN).optional().meta({
    description:
      'Makes retries safe: 1 to 255 visible ASCII characters (a UUID is a good choice), scoped to the API key. The same key with the same body within 24 h answers the first response again (same event_id, header `Idempotent-Replayed: true`) and records nothing new; with another body 422 `idempotency_key_reused`; while the first is still being handled 409.',
    example: 'b9f0c4d2-6a1e-4f3b-9c8d-7e6a5b4c3d2e',
  }),
});

export const problemExample = (
  status: number,
  code: string,
  title: string,
  detail: string,
  extra: object = {},
) => ({
  type: `https://docs.mds.dev/problems/${code}`,
  title,
  status,
  detail,
  code,
  ...extra,
  request_id: REQUEST_ID,
});

export function problem(
  description: string,
  examples: Record<string, ReturnType<typeof problemExample>>,
  headers: Record<string, z.ZodType> = {},
) {
  return {
    description,
    headers: z.object({ 'X-Request-Id': requestIdHeader, ...headers }),
    content: {
      'application/problem+json': {
        schema: problemSchema,
        examples: Object.fromEntries(Object.entries(examples).map(([name, value]) => [name, { value }])),
      },
    },
  };
}

export const unauthorized = {
  description: "Missing, unknown or revoked X-API-Key (the spec's 401: a JSON body with `detail`).",
  headers: z.object({
    'WWW-Authenticate': z.string().meta({ example: 'ApiKey header="X-API-Key"' }),
    'X-Request-Id': requestIdHeader,
  }),
  content: {
    'application/json': {
      schema: unauthorizedSchema,
      examples: { unauthorized: { value: { detail: 'Invalid or missing API key.' } } },
    },
  },
};

export const rateLimited = (what: string) =>
  problem(
    `Too many ${what} for the API key or the company (\`rate_limited\`, with the RateLimit headers), or too many requests without a valid API key from the client's address (\`auth_rate_limited\`, before any key is looked up); wait \`Retry-After\` seconds.`,
    {
      rate_limited: problemExample(
        429,
        'rate_limited',
        'Too many requests',
        'The API key sends more than 100 requests per second (bursts up to 200). Retry after 1 s.',
        { violated_policy: 'send-key' },
      ),
      auth_rate_limited: problemExample(
        429,
        'auth_rate_limited',
        'Too many requests',
        'Too many requests without a valid API key from this address. Retry after 1 s.',
      ),
    },
    {
      'Retry-After': retryAfter,
      RateLimit: rateLimitHeaders.RateLimit.optional(),
      'RateLimit-Policy': rateLimitHeaders['RateLimit-Policy'].optional(),
    },
  );

export const insufficientScope = problem(
  'The API key lacks the scope this operation needs (`insufficient_scope`, naming `required_scope`): keys carry scopes `send`, `check`, `change_phone`, `read`; a key issued without naming them has every scope but `change_phone`.',
  {
    insufficient_scope: problemExample(
      403,
      'insufficient_scope',
      'Forbidden',
      'This API key lacks the "change_phone" scope; issue a key with it (see the API docs on key scopes).',
      { required_scope: 'change_phone' },
    ),
  },
);

export const authBusy = problemExample(
  503,
  'auth_busy',
  'Service unavailable',
  'Too many API keys are being checked right now; retry shortly.',
);

export const internalError = problem(
  'Server-side error (`internal_error`); nothing is promised about the request.',
  {
    internal_error: problemExample(
      500,
      'internal_error',
      'Internal error',
      'Something went wrong on our side.',
    ),
  },
);

export function acceptResponses(accepted: z.ZodType, acceptedExample: object): ZodOpenApiResponsesObject {
  return {
    '202': {
      description:
        'Accepted: the request is an event in the log and will be processed; its outcome comes by webhook.',
      headers: z.object({
        'X-Request-Id': requestIdHeader,
        'Idempotent-Replayed': z.literal('true').optional().meta({
          description:
            'Present when this is the stored answer of an earlier request with the same Idempotency-Key.',
        }),
        ...rateLimitHeaders,
      }),
      content: {
        'application/json': { schema: accepted, examples: { accepted: { value: acceptedExample } } },
      },
      links: {
        getEvent: {
          operationId: 'getEvent',
          parameters: { event_id: '$response.body#/event_id' },
          description: 'The state of what was accepted, by its `event_id` (readable a moment after the 202).',
        },
      },
    },
    '400': problem(
      'Malformed JSON, or a body that is not valid UTF-8 (`malformed_json`), or an invalid Idempotency-Key header (`invalid_idempotency_key`).',
      {
        malformed_json: problemExample(
          400,
          'malformed_json',
          'Malformed JSON',
          'The request body is not valid JSON.',
        ),
      },
    ),
    '401': unauthorized,
    '403': insufficientScope,
    '409': problem(
      'A request with the same Idempotency-Key is still being handled (`idempotency_request_in_progress`).',
      {
        in_progress: problemExample(
          409,
          'idempotency_request_in_progress',
          'Request in progress',
          'A request with this Idempotency-Key is still being handled; retry shortly.',
        ),
      },
      { 'Retry-After': retryAfter },
    ),
    '413': problem('The body is larger than 64 KiB (`body_too_large`).', {
      body_too_large: problemExample(
        413,
        'body_too_large',
        'Request body too large',
        'The request body is larger than allowed.',
      ),
    }),
    '415': problem('The body is not sent as `application/json` (`unsupported_media_type`).', {
      unsupported_media_type: problemExample(
        415,
        'unsupported_media_type',
        'Unsupported media type',
        'Send the body as JSON with "Content-Type: application/json".',
      ),
    }),
    '422': problem(
      'The body breaks a rule of its schema (`validation_failed`; `errors` names each field at fault, once, with a JSON Pointer and a stable code such as `required`, `unknown_field`, `too_long`, `invalid_phone_number`, `text_too_long`, or `invalid_characters` for a string holding NUL or another control character but tab, line feed and carriage return, a lone surrogate or a non-character, which any string field refuses before its other rules), or the Idempotency-Key was used with another body (`idempotency_key_reused`).',
      {
        validation_failed: problemExample(
          422,
          'validation_failed',
          'Validation failed',
          'The request body is not valid; see errors.',
          {
            errors: [
              {
                pointer: '#/phone_number',
                detail: 'Use the international format: 79123456789 instead of 89123456789.',
                code: 'invalid_phone_number',
              },
            ],
          },
        ),
        invalid_characters: problemExample(
          422,
          'validation_failed',
          'Validation failed',
          'The request body is not valid; see errors.',
          {
            errors: [
              {
                pointer: '#/text',
                detail: `Holds U+0000 (a control character) at character 6; text may not hold ${INVALID_CHARACTERS_RULE}`,
                code: 'invalid_characters',
              },
            ],
          },
        ),
        idempotency_key_reused: problemExample(
          422,
          'idempotency_key_reused',
          'Idempotency-Key reused',
          'This Idempotency-Key was used with a different request.',
        ),
      },
    ),
    '429': rateLimited('requests'),
    '500': internalError,
    '503': problem(
      'The event log (`broker_unavailable`), the key check (`auth_unavailable`, or `auth_busy` when too many keys are being checked at once) or the keys that seal personal data (`personal_data_keys_unavailable`) are unavailable; nothing was acknowledged. Retry after `Retry-After` seconds with the same Idempotency-Key.',
      {
        broker_unavailable: problemExample(
          503,
          'broker_unavailable',
          'Service unavailable',
          'The request was not accepted: the event log is unavailable. Retry shortly.',
        ),
        auth_busy: authBusy,
        personal_data_keys_unavailable: problemExample(
          503,
          'personal_data_keys_unavailable',
          'Service unavailable',
          'The request cannot be stored safely right now; retry shortly.',
        ),
      },
      { 'Retry-After': retryAfter },
    ),
  };
}

const curl = (path: string, body: object, idempotencyKey: boolean) =>
  [
    `curl -s "$MDS_URL${path}" \\`,
    '  -H "X-API-Key: $MDS_API_KEY" -H "Content-Type: application/json" \\',
    ...(idempotencyKey ? [`  -H "Idempotency-Key: $(uuidgen)" \\`] : []),
    `  -d '${JSON.stringify(body)}'`,
  ].join('\n');
export const sdk = (call: string) =>
  [
    "import { MdsClient } from '@mds/client';",
    '',
    'const mds = new MdsClient({ baseUrl: process.env.MDS_URL!, apiKey: process.env.MDS_API_KEY! });',
    call,
  ].join('\n');
/** curl and SDK samples; a batch has no Idempotency-Key header (its messages have their own). */
export const codeSamples = (path: string, body: object, call: string, idempotencyKey = true) => [
  { lang: 'Shell', label: 'curl', source: curl(path, body, idempotencyKey) },
  { lang: 'TypeScript', label: '@mds/client', source: sdk(call) },
];

export function acceptOperation(o: {
  operationId: string;
  tag: string;
  summary: string;
  description: string;
  path: string;
  request: z.ZodType;
  examples: Record<string, { summary: string; value: object }>;
  accepted: z.ZodType;
  acceptedExample: object;
  sdkCall: string;
}): ZodOpenApiOperationObject {
  const first = Object.values(o.examples)[0]!.value;
  return {
    operationId: o.operationId,
    tags: [o.tag],
    summary: o.summary,
    // The SDK's sample in the prose too: Redoc's sample panel shows one sample per operation (curl).
    description: `${o.description}\n\nWith \`@mds/client\` (it adds the Idempotency-Key and retries 429 and 503):\n\n\`\`\`ts\n${o.sdkCall}\n\`\`\``,
    security: [{ ApiKey: [] }],
    requestParams: { header: idempotencyHeader.extend(requestHeaders.shape) },
    requestBody: {
      required: true,
      content: { 'application/json': { schema: o.request, examples: o.examples } },
    },
    responses: acceptResponses(o.accepted, o.acceptedExample),
    'x-codeSamples': codeSamples(o.path, first, o.sdkCall),
  };
}

const webhookResponses: ZodOpenApiResponsesObject = {
  '2XX': { description: 'Received. Only a 2xx within 15 s counts; anything else (a 3xx too) is retried.' },
  '410': { description: 'Gone: the endpoint is disabled and nothing more is sent to it.' },
};

export function webhook(o: {
  operationId: string;
  summary: string;
  description: string;
  schema: z.ZodType;
}): {
  post: ZodOpenApiOperationObject;
} {
  return {
    post: {
      operationId: o.operationId,
      tags: ['Webhooks'],
      summary: o.summary,
      description: `${o.description}\n\nSent to every enabled webhook endpoint of the company subscribed to this type (an endpoint subscribed to no type receives every type), each with its own \`webhook-id\`, signed the Standard Webhooks way with each of that endpoint's \`whsec_\` secrets, and retried on the schedule immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (±20%) until a 2xx. Verify the signature on the raw body before parsing it (\`verifyWebhook\` of \`@mds/client\`, or the \`standardwebhooks\` library), refuse timestamps more than 5 minutes off, and drop duplicates by \`webhook-id\`.`,
      // Not an API key: each request is signed (the webhook-* headers), which OpenAPI's security schemes cannot say.
      security: [],
      requestParams: { header: webhookHeadersSchema },
      requestBody: { required: true, content: { 'application/json': { schema: o.schema } } },
      responses: webhookResponses,
      'x-codeSamples': [
        {
          lang: 'TypeScript',
          label: '@mds/client',
          source: [
            "import { verifyWebhook } from '@mds/client';",
            '',
            '// express.raw({ type: "application/json" }) keeps the body as the bytes that were signed',
            "app.post('/mds-webhook', express.raw({ type: 'application/json' }), (req, res) => {",
            "  // The endpoint's own secrets (the current one, and a rotated-out one while it still signs)",
            "  const notification = verifyWebhook(req.body, req.headers, process.env.MDS_WEBHOOK_SECRETS!.split(','));",
            `  if (notification.type === '${o.operationId === 'messageStatus' ? 'message.status' : o.operationId === 'clientCheck' ? 'client.check' : 'client.phone_changed'}') {`,
            '    // ...',
            '  }',
            '  res.sendStatus(204);',
            '});',
          ].join('\n'),
        },
      ],
    },
  };
}

export const codeCatalogue = (codes: Record<string, string>) =>
  Object.entries(codes)
    .map(([code, meaning]) => `| \`${code}\` | ${meaning} |`)
    .join('\n');
