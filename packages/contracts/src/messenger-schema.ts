import { z } from 'zod';
import { messengerNamed, messengerNames } from './messengers.js';

const quoted = (names: readonly string[]) => names.map((n) => JSON.stringify(n)).join(' or ');

/**
 * A messenger's name as a request or a response carries it. The name is checked against the catalogue when a
 * value is parsed, not when the schema is made, so a messenger registered later (a plugin, a test's fake) is
 * taken; the JSON Schema lists (`enum`) the messengers of the catalogue when the schema was made. An unknown
 * name fails as a zod enum does (`invalid_value`, "Expected "telegram" or "max""), so callers keep their codes.
 */
export function messengerNameSchema() {
  return z
    .string({
      error: (issue) => (issue.input === undefined ? 'Required' : `Expected ${quoted(messengerNames())}`),
    })
    .superRefine((value, ctx) => {
      if (messengerNamed(value)) return;
      const names = messengerNames();
      ctx.addIssue({
        code: 'invalid_value',
        values: names,
        input: value,
        message: `Expected ${quoted(names)}`,
      });
    })
    .meta({ enum: messengerNames() });
}
