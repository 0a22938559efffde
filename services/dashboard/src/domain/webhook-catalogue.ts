/**
 * The webhook notifications a company receives, each with its JSON Schema and an example: what the dashboard's
 * event catalogue shows. A test checks the dispatcher's real bodies against these schemas, so they cannot drift.
 */

import { BUILT_IN_MESSENGERS, messengerNames } from '@mds/contracts/messengers';

type JsonSchema = Record<string, unknown>;

const envelope = (type: string) => ({
  type: { const: type, description: 'The kind of notification.' },
  event_id: {
    type: 'string',
    format: 'uuid',
    description: 'The event_id the API answered with 202 (the message or request this is about).',
  },
  timestamp: {
    type: 'string',
    format: 'date-time',
    description: 'When the outcome happened: ISO 8601 in UTC with milliseconds.',
  },
});

const failure = {
  error_code: { type: 'string', description: 'A stable machine code (the error-code table).' },
  error_description: { type: 'string', description: 'The same in words, for people.' },
};

const schema = (
  type: string,
  properties: JsonSchema,
  required: string[],
  extra: JsonSchema = {},
): JsonSchema => ({
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: type,
  type: 'object',
  properties: { ...envelope(type), ...properties },
  required: ['type', 'event_id', 'timestamp', ...required],
  additionalProperties: false,
  ...extra,
});

export interface CatalogueEntry {
  type: 'message.status' | 'client.check' | 'client.phone_changed' | 'webhook.test';
  schema: JsonSchema;
  example: Record<string, unknown>;
}

export const WEBHOOK_CATALOGUE: readonly CatalogueEntry[] = [
  {
    type: 'message.status',
    schema: schema('message.status', { state: { enum: ['sent', 'failed'] }, ...failure }, ['state'], {
      if: { properties: { state: { const: 'failed' } } },
      then: { required: ['error_code', 'error_description'] },
      else: { not: { anyOf: [{ required: ['error_code'] }, { required: ['error_description'] }] } },
    }),
    example: {
      type: 'message.status',
      event_id: '0b9f6a52-2f7e-4a8e-9a51-1c6f0e3d2b11',
      timestamp: '2026-11-21T12:00:00.041Z',
      state: 'failed',
      error_code: 'CLIENT_NOT_FOUND',
      error_description: 'no client with this phone number in the company',
    },
  },
  {
    type: 'client.check',
    schema: schema(
      'client.check',
      {
        phone_number: { type: 'string', pattern: '^\\d{11,15}$' },
        exists: { type: 'boolean' },
        bots: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              service: { enum: [...messengerNames(), 'unknown'] },
              bot_name: { type: 'string' },
              reachable: { type: 'boolean' },
            },
            required: ['service', 'bot_name', 'reachable'],
            additionalProperties: false,
          },
        },
      },
      ['phone_number', 'exists', 'bots'],
    ),
    example: {
      type: 'client.check',
      event_id: '5e1c2a7d-8b0e-4f4e-b7a2-9a0c3e1f6d22',
      timestamp: '2026-11-21T12:00:00.120Z',
      phone_number: '79123456789',
      exists: true,
      bots: [{ service: BUILT_IN_MESSENGERS[0]!.name, bot_name: 'shop', reachable: true }],
    },
  },
  {
    type: 'client.phone_changed',
    schema: schema(
      'client.phone_changed',
      {
        state: { enum: ['changed', 'failed'] },
        old_phone: { type: 'string' },
        new_phone: { type: 'string' },
        links_moved: { type: 'integer', minimum: 0 },
        ...failure,
      },
      ['state'],
      {
        if: { properties: { state: { const: 'failed' } } },
        then: { required: ['error_code', 'error_description'] },
        else: { required: ['old_phone', 'new_phone', 'links_moved'] },
      },
    ),
    example: {
      type: 'client.phone_changed',
      event_id: 'a7d2c0e4-3b1f-4c55-8e9a-2d4f6b8a0c33',
      timestamp: '2026-11-21T12:00:00.300Z',
      state: 'changed',
      old_phone: '79123456789',
      new_phone: '79876543210',
      links_moved: 2,
    },
  },
  {
    type: 'webhook.test',
    schema: schema('webhook.test', { message: { type: 'string' } }, ['message']),
    example: {
      type: 'webhook.test',
      event_id: '3c9e1b7a-6d2f-4e8a-b1c0-7f5a9d2e4b44',
      timestamp: '2026-11-21T12:00:01.000Z',
      message: 'A test notification: your endpoint received and can verify it.',
    },
  },
];

/** How a receiver checks a notification, in the languages most companies write their endpoints in. */
export const VERIFY_SNIPPETS: readonly { language: string; code: string }[] = [
  {
    language: 'Node.js',
    code: `import { Webhook } from 'standardwebhooks'; // npm install standardwebhooks

const webhook = new Webhook(process.env.MDS_WEBHOOK_SECRET); // whsec_...
// rawBody: the request body exactly as received (before JSON parsing)
const event = webhook.verify(rawBody, {
  'webhook-id': req.headers['webhook-id'],
  'webhook-timestamp': req.headers['webhook-timestamp'],
  'webhook-signature': req.headers['webhook-signature'],
}); // throws on a bad signature or a stale timestamp`,
  },
  {
    language: 'Python',
    code: `from standardwebhooks.webhooks import Webhook  # pip install standardwebhooks

webhook = Webhook(os.environ["MDS_WEBHOOK_SECRET"])  # whsec_...
event = webhook.verify(raw_body, request.headers)  # raises on a bad signature`,
  },
  {
    language: 'Any language',
    code: `signed  = webhook-id + "." + webhook-timestamp + "." + raw body
key     = base64-decode(secret without "whsec_")
expect  = "v1," + base64(HMAC-SHA256(key, signed))
valid   = expect equals one of the space-separated entries of webhook-signature
          (compared in constant time), and webhook-timestamp is within 5 minutes`,
  },
];
