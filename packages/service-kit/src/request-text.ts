import { isUtf8 } from 'node:buffer';
import express, { type RequestHandler } from 'express';
import type { z } from 'zod';
import { describeInvalidCharacter, firstInvalidCharacter, INVALID_CHARACTERS_RULE } from '@mds/text';
import { Problem } from './problems.js';

/** The field code of a string holding a character no text may hold (@mds/contracts' rule). */
export const INVALID_CHARACTERS = 'invalid_characters';

/**
 * A zod refinement for a string a caller sends: refuses, with the field's code `invalid_characters`, a
 * character no text may hold (NUL and the other controls but tab, line feed and carriage return, lone
 * surrogates, non-characters), naming the first and where it is, never the text. Put it first on the field:
 * it stops the field's other checks, so the field gets this one error (`z.string().superRefine(...)`).
 */
export function refuseInvalidCharacters(value: string, ctx: z.RefinementCtx): void {
  const found = firstInvalidCharacter(value);
  if (!found) return;
  const position = [...value.slice(0, found.index)].length + 1;
  ctx.addIssue({
    code: 'custom',
    message: `Holds ${describeInvalidCharacter(found.codePoint)} at character ${position}; text may not hold ${INVALID_CHARACTERS_RULE}`,
    params: { code: INVALID_CHARACTERS },
    continue: false,
  });
}

/**
 * express.json for API bodies: JSON objects and arrays only, at most `limit`, and a body declared (or taken
 * to be) UTF-8 must be valid UTF-8 (RFC 8259): 400 `malformed_json`, not a body whose broken bytes were
 * quietly read as U+FFFD.
 */
export function jsonBody(o: { limit: number | string }): RequestHandler {
  return express.json({
    limit: o.limit,
    strict: true,
    type: 'application/json',
    verify: (_req, _res, body, encoding) => {
      if (/^utf-?8$/i.test(encoding) && !isUtf8(body)) {
        throw new Problem(
          400,
          'malformed_json',
          'Malformed JSON',
          'The request body is not valid UTF-8; JSON is exchanged in UTF-8 (RFC 8259).',
        );
      }
    },
  });
}
