// The schemas of the admin API's answers, for its OpenAPI document (openapi.ts).
import { z } from 'zod';
import { MAX_WEBHOOK_ENDPOINTS, messengerNameSchema } from '@mds/contracts';

const at = z.string().meta({ description: 'ISO 8601, UTC.', example: '2026-11-21T13:25:28.123Z' });
const id = (example: string) => z.string().meta({ example });

const apiKeyView = z
  .object({
    key_id: id('k_1a2b3c'),
    prefix: z.string(),
    label: z.string(),
    issued_at: at,
    revoked_at: at.nullable(),
    expires_at: at.nullable().meta({
      description: 'When a rolled key stops working (its overlap); null: until revoked.',
    }),
    rolled_from: z.string().nullable().meta({ description: 'The key this one was rolled from.' }),
  })
  .meta({
    id: 'ApiKeySummary',
    description: 'An API key by its prefix; the key itself is shown once, when issued.',
  });
export const endpointView = z
  .object({
    id: z
      .string()
      .meta({ description: '`ep_` and 22 letters and digits, or `ep_default`.', example: 'ep_default' }),
    url: z.string(),
    description: z.string(),
    event_types: z.array(z.string()).meta({
      description: 'The notification types it receives; empty: every type, also types added later.',
    }),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    disabled_automatically: z.boolean().meta({
      description: 'Turned off by the dispatcher (410 Gone, or failing for the documented window).',
    }),
    rate_limit_per_second: z.number().int().nullable().meta({ description: 'null: no limit of its own.' }),
    secrets: z.array(
      z.object({
        secret_id: z.string(),
        current: z.boolean().meta({ description: 'The one new notifications are signed with first.' }),
        expires_at: at.nullable().meta({ description: 'When a rotated-out secret stops signing.' }),
      }),
    ),
  })
  .meta({
    id: 'WebhookEndpointView',
    description: `One of the company's webhook endpoints (0 to ${MAX_WEBHOOK_ENDPOINTS}): its settings, state, and secrets by id (never the secrets themselves).`,
  });
export const webhookView = z
  .object({
    url: z.string(),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable(),
    secrets: z.array(z.object({ secret_id: z.string(), created_at: at, expires_at: at.nullable() })),
  })
  .meta({
    id: 'WebhookEndpoint',
    description:
      'The endpoint ep_default (the single webhook URL of versions before endpoints) and its secrets by id (never the secrets themselves).',
  });
export const botView = z
  .object({
    bot_id: z.string(),
    messenger: messengerNameSchema(),
    name: z.string(),
    username: z.string(),
    default: z.boolean().meta({ description: "Whether it is the company's default bot of its messenger." }),
    registered_at: at,
  })
  .meta({ id: 'Bot' });
export const companySummary = z
  .object({ company_id: z.uuid(), name: z.string(), created_at: at })
  .meta({ id: 'CompanySummary' });
export const company = companySummary
  .extend({
    api_keys: z.array(apiKeyView),
    webhook: webhookView.nullable(),
    webhook_endpoints: z.array(endpointView),
    bots: z.array(botView),
  })
  .meta({ id: 'Company' });
export const issuedKey = z
  .object({
    key_id: z.string(),
    api_key: z.string().meta({ description: 'The key: shown this once, stored only as a hash.' }),
    prefix: z.string(),
    label: z.string(),
    note: z.literal('the key is shown once'),
  })
  .meta({ id: 'IssuedApiKey' });
export const rolledKey = issuedKey
  .extend({
    scopes: z.array(z.string()),
    rolled_from: z.string().meta({ description: 'The key rolled.' }),
    old_key_expires_at: at.meta({ description: 'When the rolled key stops (now, with no overlap).' }),
  })
  .meta({ id: 'RolledApiKey' });
export const secrets = z
  .object({
    secrets: z.array(
      z.object({
        secret_id: z.string(),
        secret: z.string().meta({ description: 'A `whsec_` signing secret.' }),
        expires_at: at.nullable(),
      }),
    ),
  })
  .meta({
    id: 'WebhookSecrets',
    description: 'The signing secrets in use: the current one, and one being rotated out.',
  });
export const botCheck = z
  .union([
    z.object({ bot_id: z.string(), ok: z.literal(true), username: z.string(), checked_at: at }),
    z.object({
      bot_id: z.string(),
      ok: z.literal(false),
      reason: z.string(),
      detail: z.string(),
      checked_at: at,
    }),
  ])
  .meta({
    id: 'BotCheck',
    description: "Whether the messenger takes the bot's token (getMe / GET /me) right now.",
  });
export const clientLinks = z
  .object({
    phone_number: z.string(),
    exists: z.boolean(),
    links: z.array(
      z.object({
        messenger: messengerNameSchema().nullable(),
        bot_id: z.string(),
        bot_name: z.string().nullable(),
        chat_id: z.string(),
        reachable: z.boolean(),
        unreachable_reason: z.string().nullable(),
        since: at,
      }),
    ),
  })
  .meta({ id: 'ClientLinks' });

export const resealReport = z
  .object({
    key_id: z.string().meta({ description: 'The key everything is sealed under now.' }),
    companies: z.number().int(),
    bot_tokens: z.number().int(),
    webhook_secrets: z.number().int(),
    person_keys: z.number().int(),
    failed: z.array(z.object({ company_id: z.string(), error: z.string() })),
  })
  .meta({ id: 'ResealReport' });
