import { z } from 'zod';
import {
  API_KEY_SCOPES,
  LEGACY_API_KEY_SCOPES,
  MAX_ENDPOINT_DESCRIPTION_LENGTH,
  MAX_ENDPOINT_RATE_LIMIT,
  messengerNameSchema,
  WEBHOOK_EVENT_TYPES,
} from '@mds/contracts';
import { refuseInvalidCharacters } from '@mds/service-kit';
import { MAX_ROLL_OVERLAP_SECONDS } from '../../domain/accounts.js';

// Every string a caller sends first passes the one rule of the public API (422 `invalid_characters`: no NUL or
// other control but tab and line breaks, no lone surrogate or non-character): what becomes an event is text.
const text = () => z.string().superRefine(refuseInvalidCharacters);
const name = text().trim().min(1).max(100);
const botName = text().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, "_" and "-", at most 64');
/**
 * A webhook URL may not carry a user name or password: they would travel in every event and log that
 * names the endpoint. Authenticate the caller by the signature instead (or, if the receiver insists, a
 * query parameter: the URL is kept as given, and logged, evented and stored for display without its query).
 */
const webhookUrl = text()
  .url({ protocol: /^https?$/, message: 'an http(s) URL' })
  .max(2048)
  .refine((url) => !/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(url), {
    message: 'a webhook URL may not contain a user name or password (user:password@)',
    params: { code: 'userinfo_not_allowed' },
  });

const endpointSettings = {
  url: webhookUrl,
  description: text().trim().max(MAX_ENDPOINT_DESCRIPTION_LENGTH),
  event_types: z.array(z.enum(WEBHOOK_EVENT_TYPES)).max(100).meta({
    description: 'The notification types it receives; empty or absent: every type, also types added later.',
  }),
  rate_limit_per_second: z
    .int()
    .min(1)
    .max(MAX_ENDPOINT_RATE_LIMIT)
    .nullable()
    .meta({ description: 'At most this many requests per second to it; null: no limit of its own.' }),
};

/** The request bodies, as validated here and as the admin API's OpenAPI document describes them. */
export const adminRequestSchemas = {
  company: z.strictObject({ name }),
  apiKey: z.strictObject({
    label: text().trim().max(100).default(''),
    // Unset: every scope but change_phone (a key that may re-point links is asked for by name).
    scopes: z
      .array(z.enum(API_KEY_SCOPES))
      .min(1)
      .default([...LEGACY_API_KEY_SCOPES]),
  }),
  // 0: the old key ends at once; at most 7 days (MAX_ROLL_OVERLAP_SECONDS).
  rollApiKey: z.strictObject({
    expires_in_seconds: z
      .number()
      .int()
      .min(0)
      .max(MAX_ROLL_OVERLAP_SECONDS)
      .meta({ description: 'How long the old key keeps working: 0 (ends at once) to 604800 (7 days).' }),
  }),
  webhook: z.strictObject({ url: webhookUrl }),
  webhookEndpoint: z.strictObject({
    url: endpointSettings.url,
    description: endpointSettings.description.default(''),
    event_types: endpointSettings.event_types.default([]),
    rate_limit_per_second: endpointSettings.rate_limit_per_second.default(null),
    enabled: z.boolean().default(true),
  }),
  webhookEndpointChange: z.strictObject({
    url: endpointSettings.url.optional(),
    description: endpointSettings.description.optional(),
    event_types: endpointSettings.event_types.optional(),
    rate_limit_per_second: endpointSettings.rate_limit_per_second.optional(),
  }),
  webhookEndpointDisable: z.strictObject({
    reason: text().trim().min(1).max(500).optional(),
  }),
  bot: z.strictObject({
    messenger: messengerNameSchema(),
    name: botName,
    token: text().min(1).max(512),
    default: z.boolean().default(false),
  }),
};
