// The public API's operations and webhooks, as the OpenAPI document (openapi.ts) lists them.
import { BUILT_IN_MESSENGERS, type MessengerDefinition } from '@mds/contracts';
import {
  messageStatusNotificationSchema,
  clientCheckNotificationSchema,
  phoneChangedNotificationSchema,
} from '@mds/contracts/webhooks';
import { z } from 'zod';
import type { ZodOpenApiObject, ZodOpenApiOperationObject, ZodOpenApiPathsObject } from 'zod-openapi';
import {
  acceptOperation,
  acceptResponses,
  codeSamples,
  authBusy,
  EVENT_ID,
  insufficientScope,
  internalError,
  problem,
  problemExample,
  rateLimited,
  rateLimitHeaders,
  requestHeaders,
  requestIdHeader,
  retryAfter,
  sdk,
  unauthorized,
  webhook,
} from './openapi-parts.js';
import {
  acceptedSchema,
  changePhoneRequestSchema,
  clientCheckRequestSchema,
  eventStateSchema,
  MAX_BATCH_MESSAGES,
  sendAcceptedSchema,
  sendBatchAcceptedSchema,
  sendBatchRequestSchema,
  sendRequestSchema,
} from './schemas.js';
import { cancelAcceptedSchema, cancelRequestSchema, NOT_CANCELABLE } from './cancel.js';

/** The messenger the examples send through first, and the one they name a bot of. */
const [FIRST, SECOND = FIRST] = BUILT_IN_MESSENGERS as [MessengerDefinition, ...MessengerDefinition[]];

/** A send through each of two messengers: with a link button, and through a named bot. */
function sendExamples() {
  return {
    [FIRST.name]: {
      summary: `${FIRST.label}, with a link button`,
      value: {
        phone_number: '79123456789',
        service: FIRST.name,
        text: 'Your order has shipped',
        buttons: [{ text: 'Track it', url: 'https://example.com/track/42' }],
      },
    },
    [SECOND.name]: {
      summary: `${SECOND.label}, through a named bot`,
      value: {
        phone_number: '79123456789',
        service: SECOND.name,
        bot_name: 'shop_bot',
        text: 'Your order has shipped',
      },
    },
    expiring: {
      summary: 'A code that is worthless after 5 minutes (`ttl_seconds`; otherwise failed `EXPIRED`)',
      value: {
        phone_number: '79123456789',
        service: FIRST.name,
        text: 'Your login code: 4711',
        ttl_seconds: 300,
      },
    },
    metadata: {
      summary: 'With metadata, echoed in its webhook',
      value: {
        phone_number: '79123456789',
        service: FIRST.name,
        text: 'Your order has shipped',
        metadata: { order_id: 'A-1042', campaign: 'autumn' },
      },
    },
    scheduled: {
      summary: 'Sent at a given time (`send_at`), cancelable until then (`POST /api/v1/cancel`)',
      value: {
        phone_number: '79123456789',
        service: FIRST.name,
        text: 'Your table is booked for 19:00 today',
        send_at: '2026-12-01T09:00:00+03:00',
      },
    },
    fallback: {
      summary: `${FIRST.label} first, then ${SECOND.label} if the person cannot be reached there (\`fallback\`)`,
      value: {
        phone_number: '79123456789',
        service: FIRST.name,
        text: 'Your order has shipped',
        fallback: [{ service: SECOND.name, bot_name: 'shop_max_bot' }],
      },
    },
  };
}

/** The operations of the public API, by path. */
export function publicPaths(): ZodOpenApiPathsObject {
  return {
    ...acceptingPaths(),
    '/api/v1/send/batch': { post: sendBatchOperation() },
    '/api/v1/cancel': { post: cancelOperation() },
    '/api/v1/events/{event_id}': { get: getEventOperation() },
  };
}

/** The operations answered 202 at once, whose outcome comes on a webhook. */
function acceptingPaths(): ZodOpenApiPathsObject {
  return {
    '/api/v1/send': {
      post: acceptOperation({
        operationId: 'send',
        tag: 'Messages',
        summary: 'Send a message',
        description:
          "Queues a text message, with optional link buttons, to a person by phone number through a messenger (the company's default bot of that messenger, or `bot_name`). The person must have started that bot and shared their contact with it. The result comes as a `message.status` webhook: `sent` or `failed` with an `error_code`. Many messages at once: `POST /api/v1/send/batch`.",
        path: '/api/v1/send',
        request: sendRequestSchema,
        examples: sendExamples(),
        accepted: sendAcceptedSchema,
        acceptedExample: { status: 'accepted', event_id: EVENT_ID, data: { state: 'new' } },
        sdkCall: [
          'const { event_id } = await mds.send({',
          "  phone_number: '79123456789',",
          `  service: '${FIRST.name}',`,
          "  text: 'Your order has shipped',",
          "  buttons: [{ text: 'Track it', url: 'https://example.com/track/42' }],",
          '});',
        ].join('\n'),
      }),
    },
    '/api/v1/change_phone': {
      post: acceptOperation({
        operationId: 'changePhone',
        tag: 'Clients',
        summary: "Change a client's phone number",
        description:
          'Moves every bot link of `old_phone` to `new_phone`; the old number then resolves to nothing, and later messages to `new_phone` reach the person. The outcome comes as a `client.phone_changed` webhook: `changed`, or `failed` with an `error_code`.',
        path: '/api/v1/change_phone',
        request: changePhoneRequestSchema,
        examples: {
          change: {
            summary: 'A new number',
            value: { old_phone: '79123456789', new_phone: '79876543210' },
          },
        },
        accepted: acceptedSchema,
        acceptedExample: { status: 'accepted', event_id: EVENT_ID },
        sdkCall:
          "const { event_id } = await mds.changePhone({ old_phone: '79123456789', new_phone: '79876543210' });",
      }),
    },
    '/api/v1/client/check': {
      post: acceptOperation({
        operationId: 'checkClient',
        tag: 'Clients',
        summary: 'Check a client',
        description:
          'Whether the number belongs to a client of the company, and which of its bots reach them. The answer comes as a `client.check` webhook.',
        path: '/api/v1/client/check',
        request: clientCheckRequestSchema,
        examples: {
          check: { summary: 'A number', value: { phone_number: '79123456789' } },
          metadata: {
            summary: 'With metadata, echoed in its webhook',
            value: { phone_number: '79123456789', metadata: { ticket: 'T-1' } },
          },
        },
        accepted: acceptedSchema,
        acceptedExample: { status: 'accepted', event_id: EVENT_ID },
        sdkCall: "const { event_id } = await mds.checkClient({ phone_number: '79123456789' });",
      }),
    },
  };
}

/** POST /api/v1/send/batch: many sends in one request, each accepted or refused on its own. */
function sendBatchOperation(): ZodOpenApiOperationObject {
  // A single send's answers but its 202 and 400 (of the Idempotency-Key header), and no 409: an item's key in
  // flight is that item's rejection.
  const { '409': _inFlight, '202': _accepted, ...responses } = acceptResponses(sendBatchAcceptedSchema, {});
  const example = {
    messages: [
      {
        phone_number: '79123456789',
        service: FIRST.name,
        text: 'Your order has shipped',
        idempotency_key: 'order-42-shipped',
      },
      { phone_number: '89123456789', service: SECOND.name, text: 'Your order has shipped' },
    ],
  };
  const sdkCall = [
    'const { results } = await mds.sendBatch([',
    `  { phone_number: '79123456789', service: '${FIRST.name}', text: 'Your order has shipped', idempotency_key: 'order-42-shipped' },`,
    `  { phone_number: '79876543210', service: '${SECOND.name}', text: 'Your order has shipped', idempotency_key: 'order-43-shipped' },`,
    ']);',
  ].join('\n');
  return {
    operationId: 'sendBatch',
    tags: ['Messages'],
    summary: 'Send many messages',
    description: [
      `Queues 1 to ${MAX_BATCH_MESSAGES} messages, each a \`POST /api/v1/send\` body with an optional \`idempotency_key\` (the batch itself takes no Idempotency-Key header: 400 \`idempotency_key_not_supported\`). Each message is accepted or refused on its own, exactly as a single send: the 202 lists one result per message, in order, \`accepted\` with its \`event_id\` (in the event log before the answer, and the outcome comes as a \`message.status\` webhook) or \`rejected\` with the \`errors\` a single send would have had (\`pointer\` into the batch, e.g. \`#/messages/3/phone_number\`, and a \`code\`).`,
      '',
      `Each message costs a token of the key's and the company's \`send\` rate limits, valid or not; the messages beyond the tokens left are rejected \`rate_limited\` (retry them after \`Retry-After\`), and a batch of which no message got a token is a 429. A body that is not \`{"messages": [...]}\` with 1 to ${MAX_BATCH_MESSAGES} items is 422 \`validation_failed\`; one above 16 MiB 413 \`body_too_large\`. A failure of the event log or of the keys that seal personal data refuses the whole batch (503): nothing of it was accepted but what \`idempotency_key\` retries will find.`,
      '',
      `With \`@mds/client\`:\n\n\`\`\`ts\n${sdkCall}\n\`\`\``,
    ].join('\n'),
    security: [{ ApiKey: [] }],
    requestParams: { header: requestHeaders },
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: sendBatchRequestSchema,
          examples: { batch: { summary: 'Two messages, one with a national number', value: example } },
        },
      },
    },
    responses: {
      ...responses,
      '202': {
        headers: z.object({ 'X-Request-Id': requestIdHeader, ...rateLimitHeaders }),
        description: 'One result per message, in order: its event_id, or why it was rejected.',
        content: {
          'application/json': {
            schema: sendBatchAcceptedSchema,
            examples: {
              accepted: {
                value: {
                  results: [
                    { status: 'accepted', event_id: EVENT_ID },
                    {
                      status: 'rejected',
                      errors: [
                        {
                          pointer: '#/messages/1/phone_number',
                          detail: 'Use the international format: 79123456789 instead of 89123456789.',
                          code: 'invalid_phone_number',
                        },
                      ],
                    },
                  ],
                },
              },
            },
          },
        },
      },
      '400': problem(
        'Malformed JSON, or a body that is not valid UTF-8 (`malformed_json`), or an Idempotency-Key header (`idempotency_key_not_supported`: give each message its `idempotency_key`).',
        {
          idempotency_key_not_supported: problemExample(
            400,
            'idempotency_key_not_supported',
            'Idempotency-Key not supported here',
            'A batch takes no Idempotency-Key header: give each message its own `idempotency_key`.',
          ),
        },
      ),
      '422': problem(
        'The body is not `{"messages": [...]}` with 1 to 500 messages (`validation_failed`); each message\'s own faults are its rejection in the 202.',
        {
          validation_failed: problemExample(
            422,
            'validation_failed',
            'Validation failed',
            'The request body is not valid; see errors.',
            { errors: [{ pointer: '#/messages', detail: 'At most 500 messages', code: 'too_long' }] },
          ),
        },
      ),
      '413': problem('The body is larger than 16 MiB (`body_too_large`): split the batch.', {
        body_too_large: problemExample(
          413,
          'body_too_large',
          'Request body too large',
          'The request body is larger than allowed.',
        ),
      }),
    },
    'x-codeSamples': codeSamples('/api/v1/send/batch', example, sdkCall, false),
  };
}

/** POST /api/v1/cancel: a cancel of a message not yet ended (404 and 409 from the read model). */
function cancelOperation(): ZodOpenApiOperationObject {
  const operation = acceptOperation({
    operationId: 'cancel',
    tag: 'Messages',
    summary: 'Cancel a message',
    description:
      'Cancels a message that was not yet handed to the messenger, typically one scheduled with `send_at`: it then ends `failed` with `error_code` `CANCELED` and is never sent. Same API key and scope as `send`; an Idempotency-Key is not needed (a cancel may be repeated). The 202 only says the cancel was accepted: if an attempt to send the message had already started, the cancel has no effect and the message ends as it ends. Either way the one `message.status` webhook (and the read API) says the result: never both sent and `CANCELED`.',
    path: '/api/v1/cancel',
    request: cancelRequestSchema,
    examples: { cancel: { summary: 'A scheduled message', value: { event_id: EVENT_ID } } },
    accepted: cancelAcceptedSchema,
    acceptedExample: { status: 'cancel_requested', event_id: EVENT_ID },
    sdkCall: `await mds.cancel('${EVENT_ID}');`,
  });
  return {
    ...operation,
    responses: {
      ...operation.responses,
      '404': problem(
        "No message of your company has this event_id (`not_found`): unknown, another company's, or not yet in the read model (a moment after its 202).",
        {
          not_found: problemExample(
            404,
            'not_found',
            'Not found',
            'No message of your company has this event_id (an id is readable a moment after its 202).',
          ),
        },
      ),
      '409': problem(
        `The message ended already, sent or failed (\`${NOT_CANCELABLE}\`); nothing was canceled.`,
        {
          [NOT_CANCELABLE]: problemExample(
            409,
            NOT_CANCELABLE,
            'Message not cancelable',
            'The message ended already (sent); nothing was canceled.',
          ),
        },
      ),
    },
  };
}

/** GET /api/v1/events/{event_id}: the read model's state of what a 202 named. */
function getEventOperation(): ZodOpenApiOperationObject {
  return {
    operationId: 'getEvent',
    tags: ['Messages'],
    summary: 'State of a message or request',
    description: [
      'The current state of what an `event_id` from a 202 names: a message (`new`, `sent`, `failed`, with `error_code` and `error_description` when failed), a change_phone (`new`, `changed`, `rejected`) or a client check (`new`, `checked`, with the bots that reach the client), and the history of its events.',
      '',
      'It is a read model built from the event log: an id becomes readable a moment after its 202 (normally well under a second), and answers 404 until then. An id of another company answers exactly as an unknown one.',
    ].join('\n'),
    security: [{ ApiKey: [] }],
    requestParams: {
      path: z.object({
        event_id: z.string().meta({
          description: 'The `event_id` of a 202 answer (a UUID; anything else answers 404).',
          example: EVENT_ID,
        }),
      }),
      header: requestHeaders,
    },
    responses: {
      '200': {
        description: 'The state and its history.',
        headers: z.object({ 'X-Request-Id': requestIdHeader, ...rateLimitHeaders }),
        content: {
          'application/json': {
            schema: eventStateSchema,
            examples: {
              sent: {
                summary: 'A message that was sent',
                value: {
                  event_id: EVENT_ID,
                  kind: 'message',
                  state: 'sent',
                  accepted_at: '2026-11-21T13:25:27.901Z',
                  finished_at: '2026-11-21T13:25:28.123Z',
                  updated_at: '2026-11-21T13:25:28.123Z',
                  messenger: FIRST.name,
                  bot_name: null,
                  history: [
                    { type: 'MessageAccepted', at: '2026-11-21T13:25:27.901Z', event_id: EVENT_ID },
                    {
                      type: 'MessageSent',
                      at: '2026-11-21T13:25:28.123Z',
                      event_id: '3d2c1b0a-9f8e-4d7c-8b6a-5f4e3d2c1b0a',
                    },
                  ],
                },
              },
            },
          },
        },
      },
      '401': unauthorized,
      '403': insufficientScope,
      '404': problem(
        "No message or request of your company has this event_id (`not_found`): unknown, another company's, or not yet in the read model.",
        {
          not_found: problemExample(
            404,
            'not_found',
            'Not found',
            'No message or request of your company has this event_id (an id is readable a moment after its 202).',
          ),
        },
      ),
      '429': rateLimited('reads'),
      '500': internalError,
      '503': problem(
        'API keys cannot be checked right now (`auth_unavailable`, or `auth_busy` when too many are being checked at once).',
        {
          auth_unavailable: problemExample(
            503,
            'auth_unavailable',
            'Service unavailable',
            'API keys cannot be checked right now; retry shortly.',
          ),
          auth_busy: authBusy,
        },
        { 'Retry-After': retryAfter },
      ),
    },
    'x-codeSamples': [
      {
        lang: 'Shell',
        label: 'curl',
        source: `curl -s "$MDS_URL/api/v1/events/${EVENT_ID}" -H "X-API-Key: $MDS_API_KEY"`,
      },
      {
        lang: 'TypeScript',
        label: '@mds/client',
        source: sdk(`const state = await mds.getEvent('${EVENT_ID}');`),
      },
    ],
  };
}

/** What the service POSTs to a company's webhook. */
export function publicWebhooks(): NonNullable<ZodOpenApiObject['webhooks']> {
  return {
    'message.status': webhook({
      operationId: 'messageStatus',
      summary: 'The outcome of a message',
      description:
        'Once per accepted `POST /api/v1/send`, when its delivery result is known: `sent` or `failed`.',
      schema: messageStatusNotificationSchema,
    }),
    'client.check': webhook({
      operationId: 'clientCheck',
      summary: 'The answer to a client check',
      description:
        'Once per accepted `POST /api/v1/client/check`: whether the client exists and which bots reach them.',
      schema: clientCheckNotificationSchema,
    }),
    'client.phone_changed': webhook({
      operationId: 'clientPhoneChanged',
      summary: 'The outcome of a phone number change',
      description:
        'Once per accepted `POST /api/v1/change_phone`: `changed`, or `failed` with an `error_code`.',
      schema: phoneChangedNotificationSchema,
    }),
  };
}
