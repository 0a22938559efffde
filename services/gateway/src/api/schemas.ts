import {
  FALLBACK_ERROR_CODES,
  INVALID_SCALAR_VALUE_CLASS,
  messengerNamed,
  messengerNameSchema,
  messengers,
  type MessengerDefinition,
} from '@mds/contracts';
import { normalizeApiPhone } from '@mds/contracts/phone';
import { problemBodySchema, refuseInvalidCharacters } from '@mds/service-kit';
import { z } from 'zod';
import { MAX_URL_LENGTH, messengerLength, normalizeButtonUrl, showsNothing } from './content-rules.js';

/** "4096 characters for Telegram and 4000 for MAX": each messenger's text limit (the catalogue's), in words. */
export function textLimitsInWords(): string {
  const limits = messengers().map((m, i) => `${m.textLimit}${i === 0 ? ' characters' : ''} for ${m.label}`);
  return limits.length < 2 ? limits.join('') : `${limits.slice(0, -1).join(', ')} and ${limits.at(-1)}`;
}
export const MAX_BUTTONS = 10;
/** Idempotency-Key: 1 to 255 visible ASCII characters. */
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
// What shows nothing: format characters (no-break and other spaces, the soft hyphen, zero-width characters,
// bidi marks, the BOM...) and the letters drawn blank (content-rules.ts, `showsNothing`), spelled out as ranges of
// the Basic Multilingual Plane, so that a JSON Schema validator in any regex dialect reads the same class (Python's
// `re` knows no `\p{...}`); white space and the controls apart.
const BLANK =
  '\\u00a0\\u00ad\\u034f\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891\\u08e2\\u115f\\u1160\\u1680\\u180e\\u2000-\\u200f\\u2028-\\u202f\\u205f-\\u2064\\u2066-\\u206f\\u2800\\u3000\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb';
/**
 * Text as the gateway takes it: no character text may hold (@mds/contracts' rule: 422 `invalid_characters`;
 * lone surrogates only in words, as no JSON Schema regex engine of Rust or Go can name them), and some
 * character that shows. Anchored, and read left to right without backtracking: what shows nothing (tab, line
 * breaks, spaces and BLANK), then the first character that shows, then anything allowed.
 */
const SHOWS_NOTHING = `\\t\\n\\r\\u0020${BLANK}`;
const SHOWN_TEXT = `^[${SHOWS_NOTHING}]*[^${SHOWS_NOTHING}${INVALID_SCALAR_VALUE_CLASS}][^${INVALID_SCALAR_VALUE_CLASS}]*$`;

const required = (what: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? 'Required' : `Expected ${what}`),
});

/** A phone number as the spec says it: international format, digits only, 11 digits (see @mds/contracts/phone). */
const phoneNumber = z
  .string(required('a string'))
  .superRefine(refuseInvalidCharacters)
  .transform((value, ctx) => {
    const result = normalizeApiPhone(value);
    if (result.ok) return result.phone;
    ctx.addIssue({ code: 'custom', message: result.detail, params: { code: 'invalid_phone_number' } });
    return z.NEVER;
  })
  .meta({
    description:
      'International format, digits only, 11 digits, and a number of the ITU-T numbering plan (libphonenumber\'s metadata): `format: phone`. A leading "+" is allowed; spaces, dashes, dots or parentheses around the digits are tolerated and dropped; a national 8XXXXXXXXXX is refused with a hint. Invalid: 422 with the field\'s code `invalid_phone_number`.',
    pattern: '^\\+?[0-9]{11}$',
    format: 'phone',
    examples: ['79123456789'],
  });

const httpUrl = z
  .string(required('a string'))
  .superRefine(refuseInvalidCharacters)
  .max(MAX_URL_LENGTH)
  .transform((value, ctx) => {
    const checked = normalizeButtonUrl(value);
    if (checked.ok) return checked.href;
    ctx.addIssue({ code: 'custom', message: checked.message, params: { code: checked.code } });
    return z.NEVER;
  })
  .meta({
    description:
      'An absolute http:// or https:// URL with a host name, at most 2048 characters; no user name or password, no control or invisible characters. Stored and sent normalized (WHATWG URL `href`).',
    // A subset of what the gateway's check accepts, written so that any string it matches is accepted: letters-first
    // host labels (no user info), a port below 10000, a path (normalizing adds a missing "/"), RFC 3986 path and
    // query characters with valid %-escapes (none that normalizing would percent-encode), so the normalized URL is
    // no longer than the one sent.
    pattern:
      '^https?://[A-Za-z][A-Za-z0-9-]*(\\.[A-Za-z][A-Za-z0-9-]*)*(:[1-9][0-9]{0,3})?/([A-Za-z0-9._~!$&()*+,;=:@/-]|%[0-9A-Fa-f]{2})*(\\?([A-Za-z0-9._~!$&()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$',
    examples: ['https://example.com/orders/42'],
  });

export const buttonSchema = z
  .strictObject({
    text: z
      .string(required('a string'))
      .superRefine(refuseInvalidCharacters)
      .trim()
      .min(1, { message: 'Button text is empty' })
      .max(64)
      .refine((t) => t.length === 0 || !showsNothing(t), {
        message: 'Button text shows nothing (only invisible characters)',
        params: { code: 'text_invisible' },
      })
      .meta({
        description:
          'The label: 1 to 64 characters once spaces around it are trimmed, not only invisible ones, and none of the characters no text may hold (422 `invalid_characters`, as for `text`).',
        pattern: SHOWN_TEXT,
        examples: ['Track it'],
      }),
    url: httpUrl,
  })
  .meta({ id: 'LinkButton', description: 'An inline button that opens a URL.' });

export const TTL_SECONDS = { min: 10, max: 604_800 } as const;

const ttlSeconds = z
  .int(required('an integer'))
  .refine((t) => t >= TTL_SECONDS.min && t <= TTL_SECONDS.max, {
    message: `From ${TTL_SECONDS.min} to ${TTL_SECONDS.max} seconds (7 days)`,
    params: { code: 'ttl_out_of_range' },
  })
  .meta({
    description: `How long the message may wait to be sent, in seconds from its acceptance: ${TTL_SECONDS.min} to ${TTL_SECONDS.max} (7 days); 422 \`ttl_out_of_range\` outside, \`invalid_type\` for a non-integer. A message not sent by then ends \`failed\` with \`error_code\` \`EXPIRED\` and is never sent afterwards. Omitted: no expiry (the usual delivery deadline only).`,
    minimum: TTL_SECONDS.min,
    maximum: TTL_SECONDS.max,
    examples: [3600],
  });

export const MAX_METADATA_KEYS = 20;
export const MAX_METADATA_VALUE_LENGTH = 500;
const METADATA_KEY = /^[A-Za-z0-9_.-]{1,40}$/;

/**
 * `metadata` of send, change_phone and client/check: the integrator's own keys and values, echoed in every
 * webhook of the request and in the read API. Values are outside text: the characters no text may hold are
 * refused as in `text` (422 `invalid_characters`).
 */
export const metadataSchema = z
  .record(
    z.string(),
    z
      .string(required('a string'))
      .superRefine(refuseInvalidCharacters)
      // Characters as JSON Schema's maxLength counts them: code points (an emoji is one).
      .refine((v) => v.length <= MAX_METADATA_VALUE_LENGTH || [...v].length <= MAX_METADATA_VALUE_LENGTH, {
        message: `At most ${MAX_METADATA_VALUE_LENGTH} characters`,
        params: { code: 'metadata_value_too_long' },
      })
      .meta({
        maxLength: MAX_METADATA_VALUE_LENGTH,
        pattern: `^[^${INVALID_SCALAR_VALUE_CLASS}]*$`,
      }),
    required('an object'),
  )
  .superRefine((metadata, ctx) => {
    const keys = Object.keys(metadata);
    if (keys.length > MAX_METADATA_KEYS) {
      ctx.addIssue({
        code: 'custom',
        message: `At most ${MAX_METADATA_KEYS} keys; this has ${keys.length}`,
        params: { code: 'metadata_too_many_keys' },
      });
    }
    for (const key of keys.filter((k) => !METADATA_KEY.test(k))) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: 'A key is 1 to 40 letters, digits, "_", "." and "-"',
        params: { code: 'metadata_invalid_key' },
      });
    }
  })
  .optional()
  .meta({
    id: 'Metadata',
    description: `Your own data about the request, echoed as \`metadata\` in every webhook of it and in \`GET /api/v1/events/{event_id}\`: at most ${MAX_METADATA_KEYS} keys (422 \`metadata_too_many_keys\`) of 1 to 40 letters, digits, "_", "." and "-" (422 \`metadata_invalid_key\`), each with a string value of at most ${MAX_METADATA_VALUE_LENGTH} characters (422 \`metadata_value_too_long\`) and none of the characters no text may hold (422 \`invalid_characters\`). Treated as personal data (sealed, erased when the person is forgotten). \`{}\` is the same as no metadata.`,
    maxProperties: MAX_METADATA_KEYS,
    propertyNames: { pattern: METADATA_KEY.source },
    examples: [{ order_id: '42', campaign: 'autumn' }],
  });

/** The furthest ahead send_at may be: 30 days. */
export const SEND_AT_MAX_AHEAD_MS = 30 * 24 * 3600 * 1000;

const sendAt = z
  .string(required('a string'))
  .superRefine(refuseInvalidCharacters)
  .pipe(
    z.iso.datetime({
      offset: true,
      error: 'An RFC 3339 date-time with a time zone offset, e.g. 2026-12-01T09:00:00+03:00',
    }),
  )
  // Against the clock of the request: a time that is fine when sent is fine when accepted a moment later.
  .refine((t) => !(Date.parse(t) > Date.now() + SEND_AT_MAX_AHEAD_MS), {
    message: 'At most 30 days ahead',
    params: { code: 'send_at_out_of_range' },
  })
  .meta({
    description:
      "When to send the message: an RFC 3339 date-time with a time zone offset (`Z` or `+03:00`), at most 30 days ahead (422 `send_at_out_of_range`; a bad form is 422 `invalid_format`). A time in the past means now. Until then the message stays `new` and can be canceled (`POST /api/v1/cancel`); it is sent within about a second of its time, at the bot's rate limits. The delivery deadline counts from it; `ttl_seconds` still counts from acceptance, so a `ttl_seconds` that ends at or before `send_at` is refused (422 `send_at_after_expiry`).",
    format: 'date-time',
    examples: ['2026-12-01T09:00:00+03:00'],
  });

/** A bot's name, in send's `bot_name` and in each `fallback` channel's. */
const botName = z
  .string(required('a string'))
  .superRefine(refuseInvalidCharacters)
  .regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'Letters, digits, "_" and "-", 1 to 64 characters' });

export const MAX_FALLBACK_CHANNELS = 3;

const fallbackSchema = z
  .array(
    z
      .strictObject({
        service: messengerNameSchema(),
        bot_name: botName.optional().meta({
          description: "Name of one of the company's bots there; the messenger's default bot when omitted.",
        }),
      })
      .meta({
        id: 'FallbackChannel',
        description: 'A messenger, and optionally one of its bots, to try the message on.',
      }),
    required('an array'),
  )
  .refine((channels) => channels.length <= MAX_FALLBACK_CHANNELS, {
    message: `At most ${MAX_FALLBACK_CHANNELS} channels`,
    params: { code: 'fallback_too_many' },
  })
  // `[]` is no fallback: the same event, and the same request for its Idempotency-Key.
  .transform((channels) => (channels.length === 0 ? undefined : channels))
  .optional()
  .meta({
    description: `Up to ${MAX_FALLBACK_CHANNELS} more channels (a \`service\` and optionally its \`bot_name\`), tried in order when the one before could not reach the person: its outcome was one of the fallback codes (${[...FALLBACK_ERROR_CODES].map((c) => `\`${c}\``).join(', ')}), never after a call whose result is uncertain. The message still has exactly one \`message.status\` webhook, naming the channel that decided it (\`service\`, \`bot_name\`) and the \`attempts\` before it. More than ${MAX_FALLBACK_CHANNELS}: 422 \`fallback_too_many\`; a channel that names the same messenger and bot as one before it (send's own included; an omitted \`bot_name\` is the default bot): 422 \`fallback_duplicate_channel\`; a bad \`service\` or \`bot_name\` as for send's own. The text must fit every channel's messenger. \`[]\` is the same as none.`,
    maxItems: MAX_FALLBACK_CHANNELS,
    examples: [[{ service: messengers().at(-1)!.name, bot_name: 'shop_other_bot' }]],
  });

/** A channel's identity: an omitted bot_name is the messenger's default bot. */
const channelKey = (c: { service: string; bot_name?: string | undefined }) =>
  `${c.service}\n${c.bot_name ?? ''}`;

export const sendRequestSchema = z
  .strictObject({
    phone_number: phoneNumber,
    text: z
      .string(required('a string'))
      .superRefine(refuseInvalidCharacters)
      .refine((t) => t.trim().length > 0, { message: 'Text is empty', params: { code: 'text_empty' } })
      .refine((t) => t.trim().length === 0 || !showsNothing(t), {
        message: 'Text shows nothing (only white space and invisible characters such as zero-width spaces)',
        params: { code: 'text_invisible' },
      })
      .meta({
        description: `Plain text (never parsed as Markdown or HTML), with some visible character (not only white space and invisible characters such as zero-width spaces: 422 \`text_invisible\`), and none of the characters no text may hold: NUL and the other control characters but tab, line feed and carriage return, lone surrogates, and non-characters (U+FDD0 to U+FDEF, and U+FFFE and U+FFFF of every plane): 422 \`invalid_characters\`. At most ${textLimitsInWords()}, counted in UTF-16 code units as the messengers count them (an emoji outside the Basic Multilingual Plane counts two): 422 \`text_too_long\` beyond.`,
        pattern: SHOWN_TEXT,
        examples: ['Your order has shipped'],
      }),
    service: messengerNameSchema(),
    bot_name: botName
      .optional()
      .meta({ description: "Name of one of the company's bots; the messenger's default bot when omitted." }),
    buttons: z
      .array(buttonSchema, required('an array'))
      .max(MAX_BUTTONS, { message: `At most ${MAX_BUTTONS} buttons` })
      .optional(),
    ttl_seconds: ttlSeconds.optional(),
    metadata: metadataSchema,
    send_at: sendAt.optional(),
    fallback: fallbackSchema,
  })
  .superRefine((body, ctx) => {
    // Expiry counts from acceptance: a message that would expire before its time could never be sent.
    if (
      body.send_at !== undefined &&
      body.ttl_seconds !== undefined &&
      Date.parse(body.send_at) >= Date.now() + body.ttl_seconds * 1000
    )
      ctx.addIssue({
        code: 'custom',
        path: ['send_at'],
        message: 'ttl_seconds (counted from acceptance) would end at or before send_at',
        params: { code: 'send_at_after_expiry' },
      });
    const seen = new Set([channelKey(body)]);
    body.fallback?.forEach((channel, i) => {
      const key = channelKey(channel);
      if (seen.has(key))
        ctx.addIssue({
          code: 'custom',
          path: ['fallback', i],
          message:
            'The same messenger and bot as a channel before it (an omitted bot_name is the default bot)',
          params: { code: 'fallback_duplicate_channel' },
        });
      seen.add(key);
    });
    // The text goes to any of the channels: it must fit the smallest limit among them. A name the catalogue
    // does not know failed above (and the object's refinements do not run then).
    const services = [body.service, ...(body.fallback ?? []).map((c) => c.service)];
    const limiting = services.reduce((a, b) =>
      (messengerNamed(b)?.textLimit ?? Infinity) < (messengerNamed(a)?.textLimit ?? Infinity) ? b : a,
    );
    const limit = messengerNamed(limiting)?.textLimit ?? Infinity;
    const length = messengerLength(body.text);
    if (length > limit) {
      ctx.addIssue({
        code: 'custom',
        path: ['text'],
        message: `At most ${limit} UTF-16 code units for ${limiting} (as it counts them); this text has ${length}`,
        params: { code: 'text_too_long' },
      });
    }
  })
  .meta({
    id: 'SendRequest',
    // The text limit depends on the messenger: one variant per messenger of the catalogue, each with its own
    // maxLength.
    override: ({ jsonSchema }) => {
      const {
        properties,
        id: _id,
        ...object
      } = jsonSchema as {
        properties: Record<string, Record<string, unknown>>;
        id?: string;
      };
      for (const key of Object.keys(jsonSchema)) delete (jsonSchema as Record<string, unknown>)[key];
      Object.assign(jsonSchema, {
        oneOf: messengers().map((m: MessengerDefinition) => ({
          ...object,
          title: `SendRequest (${m.name})`,
          properties: {
            ...properties,
            service: { type: 'string', const: m.name, description: 'The messenger.' },
            text: { ...properties.text, maxLength: m.textLimit },
          },
        })),
      });
    },
  });

export const changePhoneRequestSchema = z
  .strictObject({ old_phone: phoneNumber, new_phone: phoneNumber, metadata: metadataSchema })
  .meta({ id: 'ChangePhoneRequest' });

export const clientCheckRequestSchema = z
  .strictObject({ phone_number: phoneNumber, metadata: metadataSchema })
  .meta({ id: 'ClientCheckRequest' });

export const sendAcceptedSchema = z
  .object({
    status: z.literal('accepted'),
    event_id: z.uuid(),
    data: z.object({ state: z.literal('new') }),
  })
  .meta({ id: 'SendAccepted' });

export const acceptedSchema = z
  .object({ status: z.literal('accepted'), event_id: z.uuid() })
  .meta({ id: 'Accepted' });

export const unauthorizedSchema = z
  .object({ detail: z.string() })
  .meta({ id: 'Unauthorized', description: 'Missing, unknown or revoked X-API-Key.' });

/** The problem body of every refusal (RFC 9457), shared with the other services' documents. */
export const problemSchema = problemBodySchema;

const timestamp = z.iso.datetime().meta({ description: 'ISO 8601, UTC.' });

const historyEntrySchema = z
  .object({
    type: z.string().meta({ description: 'Event type, e.g. `MessageAccepted`, `MessageSent`.' }),
    at: timestamp,
    event_id: z.string().meta({ description: "The event's own id (not the message's event_id)." }),
  })
  .meta({ id: 'HistoryEntry' });

const phoneChangeResultSchema = z
  .object({
    old_phone: z.string(),
    new_phone: z.string(),
    links_moved: z.number().int().nullable().meta({ description: 'Bot links moved; null until changed.' }),
  })
  .meta({ id: 'PhoneChangeResult' });

const clientCheckResultSchema = z
  .object({
    phone_number: z.string(),
    exists: z.boolean().nullable().meta({ description: 'Null until checked.' }),
    bots: z.array(
      z.object({
        messenger: messengerNameSchema().nullable(),
        bot_name: z.string(),
        reachable: z.boolean(),
      }),
    ),
  })
  .meta({ id: 'ClientCheckResult' });

export const eventStateSchema = z
  .object({
    event_id: z.uuid(),
    kind: z.enum(['message', 'change_phone', 'client_check']).meta({
      description: 'What the event_id names: a message (`/send`), a `/change_phone` or a `/client/check`.',
    }),
    state: z.enum(['new', 'sent', 'failed', 'changed', 'rejected', 'checked']).meta({
      description:
        'message: `new` -> `sent` | `failed`; change_phone: `new` -> `changed` | `rejected`; client_check: `new` -> `checked`.',
    }),
    accepted_at: timestamp.nullable().meta({ description: 'When the request was accepted (the 202).' }),
    finished_at: timestamp
      .nullable()
      .meta({ description: 'When it reached its final state; null while `new`.' }),
    updated_at: timestamp.meta({ description: 'Time of its latest event.' }),
    error_code: z.string().optional().meta({
      description:
        'When `failed` or `rejected`: the stable error code (the catalogue is in the API description).',
    }),
    error_description: z.string().optional(),
    messenger: messengerNameSchema().nullable().optional().meta({
      description:
        "Messages only: the messenger asked for; for a message with a `fallback`, the channel's (as `service`).",
    }),
    bot_name: z.string().nullable().optional().meta({
      description:
        "Messages only: the bot asked for; null means the messenger's default bot. For a message with a `fallback`: the bot of the channel it is at while `new`, of the one that decided it once ended (its name as resolved there; null when it had none).",
    }),
    service: z.string().optional().meta({
      description:
        'Only for a message with a `fallback`: the messenger of the channel it is at while `new`, of the one that decided it once ended (as its `message.status` webhook names it).',
    }),
    attempts: z
      .array(z.object({ service: z.string(), bot_name: z.string().optional(), error_code: z.string() }))
      .optional()
      .meta({
        description:
          'Only for a message with a `fallback`: each channel tried before its current one that could not reach the person, in order, as its `message.status` webhook lists them (`[]` while at its own channel). Each is also a `MessageAttemptFailed` in `history`.',
      }),
    result: z.union([phoneChangeResultSchema, clientCheckResultSchema]).optional().meta({
      description: 'change_phone and client_check: what was asked and, once finished, the outcome.',
    }),
    history: z.array(historyEntrySchema).meta({ description: 'Its events in the order they were recorded.' }),
    metadata: z.record(z.string(), z.string()).optional().meta({
      description:
        'The `metadata` of the request, only when it carried some; `{}` once the person was forgotten.',
    }),
  })
  .meta({ id: 'EventState' });

// POST /api/v1/send/batch (issue 35): many send bodies, each with its own Idempotency-Key.
export const MAX_BATCH_MESSAGES = 500;

/** A send body of a batch: the send schema itself, and the item's own Idempotency-Key. */
export const sendBatchItemSchema = sendRequestSchema
  .safeExtend({
    idempotency_key: z
      .string(required('a string'))
      .refine((key) => IDEMPOTENCY_KEY_PATTERN.test(key), {
        message: 'Idempotency-Key is 1 to 255 visible ASCII characters.',
        params: { code: 'invalid_idempotency_key' },
      })
      .optional()
      .meta({
        pattern: IDEMPOTENCY_KEY_PATTERN.source,
        description:
          "This item's Idempotency-Key, as the header of a single send: the same key with the same item (under this API key, within 24 h, in a batch or a single `POST /api/v1/send`) answers its first event_id again and records nothing new; with another item `idempotency_key_reused`; while the first is still being handled `idempotency_request_in_progress`.",
        examples: ['order-42-shipped'],
      }),
  })
  .meta({
    id: 'SendBatchItem',
    description: 'A `POST /api/v1/send` body, and an optional `idempotency_key`.',
  });

const batchOf = <S extends z.ZodType>(item: S) =>
  z.strictObject({
    messages: z
      .array(item, required('an array'))
      .min(1, { message: 'At least 1 message' })
      .max(MAX_BATCH_MESSAGES, { message: `At most ${MAX_BATCH_MESSAGES} messages` }),
  });

/** The batch as the gateway first reads it: its items are validated one by one, each refused on its own. */
export const sendBatchEnvelopeSchema = batchOf(z.unknown());

export const sendBatchRequestSchema = batchOf(sendBatchItemSchema).meta({ id: 'SendBatchRequest' });

const batchItemErrorSchema = z.object({
  pointer: z.string().meta({ description: 'JSON Pointer into the batch, e.g. `#/messages/3/phone_number`.' }),
  detail: z.string(),
  code: z.string().meta({
    description:
      "A single send's code: a field's (`required`, `invalid_phone_number`, `text_too_long`...) or the problem's (`rate_limited`, `idempotency_key_reused`, `idempotency_request_in_progress`).",
  }),
});

export const sendBatchAcceptedSchema = z
  .object({
    results: z.array(
      z.discriminatedUnion('status', [
        z.object({ status: z.literal('accepted'), event_id: z.uuid() }),
        z.object({ status: z.literal('rejected'), errors: z.array(batchItemErrorSchema).min(1) }),
      ]),
    ),
  })
  .meta({ id: 'SendBatchAccepted', description: 'One result per message, in the order sent.' });
