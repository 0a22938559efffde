import type { Request } from 'express';
import { z } from 'zod';
import { messengerNameSchema } from '@mds/contracts';
import { normalizeApiPhone } from '@mds/contracts/phone';
import { Problem } from '@mds/service-kit';
import type { MessageFilter } from '../../adapters/db/message-log.js';
import { decodeCursor } from '../../domain/cursor.js';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isoTime = z.iso.datetime({
  offset: true,
  message: 'an ISO 8601 date-time, e.g. 2026-11-21T10:00:00Z',
});
export const cursor = z
  .string()
  .max(100)
  .refine((c) => decodeCursor(c) !== undefined, 'a cursor from a previous page');

/** The message log's filters, as the page and the export take them in the query string. */
export const messageFilters = {
  event_id: z
    .string()
    .regex(UUID, 'an event_id, e.g. 0b8f7c3e-5a51-4f0e-9a55-3d1c2b7e9f10')
    .transform((id) => id.toLowerCase())
    .optional(),
  state: z.enum(['new', 'sent', 'failed']).optional(),
  error_code: z
    .string()
    .regex(/^[A-Z_]{1,64}$/, 'an error code, e.g. CLIENT_NOT_FOUND')
    .optional(),
  service: messengerNameSchema().optional(),
  bot_id: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/)
    .optional(),
  phone: z.string().max(40).optional(),
  text: z.string().trim().min(1, 'words the text contains').max(200, 'at most 200 characters').optional(),
  from: isoTime.optional(),
  to: isoTime.optional(),
};

/** Query strings arrive as strings, or arrays when repeated: repeated parameters are refused by the schema. */
export const queryOf = (req: Request) =>
  Object.fromEntries(Object.entries(req.query).filter(([, v]) => v !== ''));

function digitsOf(phone: string): string {
  const full = normalizeApiPhone(phone);
  if (full.ok) return full.phone;
  const digits = phone.replace(/[\s()+.-]/g, '');
  if (!/^\d{1,15}$/.test(digits))
    throw new Problem(
      422,
      'validation_failed',
      'Invalid phone number',
      'Search by digits: a number or its beginning.',
      [
        {
          pointer: '#/phone',
          detail: 'digits of a phone number, or its beginning',
          code: 'invalid_phone_number',
        },
      ],
    );
  return digits;
}

type Filters = z.output<z.ZodObject<typeof messageFilters>>;

/** The filter the queries take, from the parsed query string. */
export function messageFilterOf(q: Filters): Omit<MessageFilter, 'cursor' | 'limit'> {
  return {
    messageId: q.event_id,
    state: q.state,
    errorCode: q.error_code,
    messenger: q.service,
    botId: q.bot_id,
    phone: q.phone ? digitsOf(q.phone) : undefined,
    text: q.text,
    from: q.from ? new Date(q.from) : undefined,
    to: q.to ? new Date(q.to) : undefined,
  };
}
