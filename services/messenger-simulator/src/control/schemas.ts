import { z } from 'zod';
import { HOSTILE_VARIANTS } from '../domain/hostile.js';
import { secretProblem } from '../inspector/verify.js';

const id = z.coerce.number().int().positive();

export const newBotSchema = z.object({
  messenger: z.enum(['telegram', 'max']),
  username: z.string().min(1),
  name: z.string().optional(),
  token: z.string().min(1).optional(),
});

// Names beyond Telegram's 64 characters and with any characters at all (NUL, controls, lone surrogates as JSON
// escapes): tests play a messenger whose people send what no client should trust.
const NAME_MAX = 64 * 1024;

export const newPersonSchema = z.object({
  phone_number: z.string().min(1),
  first_name: z.string().min(1).max(NAME_MAX),
  last_name: z.string().max(NAME_MAX).optional(),
  username: z.string().max(NAME_MAX).optional(),
  language_code: z.string().min(2).max(10).optional(),
});

const contactSchema = z.union([
  z.object({ person_id: id }),
  z.object({
    phone_number: z.string().min(1),
    first_name: z.string().min(1),
    last_name: z.string().optional(),
  }),
]);

const onBot = { bot_id: id };

export const actionSchema = z.discriminatedUnion('action', [
  z.object({ action: z.literal('start'), ...onBot, payload: z.string().min(1).max(512).optional() }),
  z.object({
    action: z.literal('share_contact'),
    ...onBot,
    /** Someone else's contact (a simulated person, or any card); the sharer's own when absent. */
    contact: contactSchema.optional(),
    /** `plus`: the number arrives as `+79...` (Telegram phone_number, MAX vCard TEL). */
    phone_format: z.enum(['plain', 'plus']).default('plain'),
  }),
  z.object({ action: z.literal('send_text'), ...onBot, text: z.string().min(1).max(4096) }),
  z.object({ action: z.literal('block'), ...onBot }),
  z.object({ action: z.literal('stop'), ...onBot }),
  z.object({ action: z.literal('unblock'), ...onBot }),
  z.object({ action: z.literal('deactivate') }),
]);

export const faultSchema = z
  .object({
    kind: z.enum(['latency', '5xx', 'timeout', '429', 'drop-after-delivery', 'hostile-error']),
    /** Only this bot (by id), or by token. */
    bot_id: id.optional(),
    token: z.string().min(1).optional(),
    messenger: z.enum(['telegram', 'max']).optional(),
    /** Telegram method (`sendMessage`) or MAX path (`messages`, `updates`, `me`, `subscriptions`). */
    method: z.string().min(1).optional(),
    /** How many calls it hits (1 when absent). */
    count: z.number().int().positive().max(1_000_000).default(1),
    /** latency: the delay; timeout: how long the call is held before the connection drops. */
    ms: z.number().int().min(0).max(600_000).optional(),
    /** 5xx: the status (Telegram 500, MAX 503 by default); hostile-error: 400 to 599 (400 by default). */
    status: z.number().int().min(400).max(599).optional(),
    /** 429: the Telegram retry_after (5 by default); MAX sends no hint. */
    retry_after: z.number().int().positive().max(86_400).optional(),
    /** hostile-error: what the error's text holds (`controls` by default). */
    hostile: z.enum(HOSTILE_VARIANTS).optional(),
    /** hostile-error `huge`: the text's length in characters (1 MiB by default). */
    size: z
      .number()
      .int()
      .positive()
      .max(64 * 1024 * 1024)
      .optional(),
  })
  .refine((f) => f.kind !== '5xx' || f.status === undefined || f.status >= 500, {
    message: 'a 5xx fault answers a status of 500 to 599',
    path: ['status'],
  })
  .refine((f) => f.kind === 'hostile-error' || (f.hostile === undefined && f.size === undefined), {
    message: '`hostile` and `size` go with the hostile-error fault only',
    path: ['hostile'],
  });

export const requestsQuerySchema = z.object({
  bot_id: id.optional(),
  limit: z.coerce.number().int().positive().max(10_000).default(100),
});

/** The signing secrets a webhook inspector verifies with: the company's current and rotated-out ones. */
export const inspectorSecretsSchema = z.object({
  secrets: z
    .array(
      z.string().superRefine((secret, ctx) => {
        const problem = secretProblem(secret);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    )
    .max(20),
});

export const inspectorWebhooksQuerySchema = z.object({
  limit: z.coerce.number().int().positive().max(10_000).optional(),
});

export function issues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ');
}
