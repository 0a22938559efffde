// Error answers a messenger (or something in front of it) might send that no client should trust: the body of
// a `hostile-error` fault. Telegram's shape `{"ok":false,"error_code":N,"description":...}`, MAX's
// `{"code":...,"message":...}`, with the description or message holding what breaks careless storage.
import type { Messenger } from './types.js';

/**
 * - `controls`: valid JSON whose text holds NUL, BEL, ESC, DEL, a C1 control, non-characters and lone
 *   surrogates, as JSON escapes (`\u0000`, `\ud800`) or as their UTF-8;
 * - `invalid-utf8`: bytes that are no UTF-8 inside the JSON string (0xFF, an overlong NUL, a CESU-8
 *   surrogate, a cut sequence, a stray continuation byte);
 * - `huge`: a valid answer whose text is `size` characters long, the characters of `controls` all along it;
 * - `not-json`: `boom` and a raw NUL and broken bytes, with a JSON content type: the client's JSON parser fails
 *   (and some quote the start of the body in their error).
 */
export const HOSTILE_VARIANTS = ['controls', 'invalid-utf8', 'huge', 'not-json'] as const;
export type HostileVariant = (typeof HOSTILE_VARIANTS)[number];

export const DEFAULT_HOSTILE_SIZE = 1024 * 1024;

/** The characters of `controls`, between words so that where each one landed can be read. */
export const HOSTILE_TEXT =
  'nul \u0000 bel \u0007 esc \u001b[31m del \u007f nel \u0085 nc \ufffe \uffff \ufdd0 \u{1fffe} lone \ud800 \udc00 end';

/** Bytes that are no UTF-8: 0xFF, an overlong NUL, a CESU-8 surrogate, a cut 3-byte sequence, a stray continuation. */
export const INVALID_UTF8 = Uint8Array.from([
  0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80, 0xe2, 0x82, 0x20, 0x80,
]);

const utf8 = new TextEncoder();

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** JSON of `body`, with `raw` spliced in where the string `"\u0001RAW\u0001"` stands (inside a JSON string). */
function jsonWithRaw(body: object, raw: Uint8Array): Uint8Array {
  const [before, after] = JSON.stringify(body).split('\\u0001RAW\\u0001') as [string, string];
  return concat([utf8.encode(before), raw, utf8.encode(after)]);
}

/** The error body of `messenger` with `text` where its description goes (`raw` bytes where RAW marks). */
function errorBody(messenger: Messenger, status: number, text: string, raw?: Uint8Array): Uint8Array {
  const body =
    messenger === 'telegram'
      ? { ok: false, error_code: status, description: `Bad Request: ${text}` }
      : { code: status >= 500 ? 'internal.error' : 'proto.payload', message: text };
  return raw ? jsonWithRaw(body, raw) : utf8.encode(JSON.stringify(body));
}

/** The bytes of a hostile error answer, and a short, readable summary of it for the request log. */
export function hostileAnswer(
  messenger: Messenger,
  variant: HostileVariant,
  status: number,
  size = DEFAULT_HOSTILE_SIZE,
): { body: Uint8Array; summary: string } {
  switch (variant) {
    case 'controls':
      return {
        body: errorBody(messenger, status, HOSTILE_TEXT),
        summary: 'hostile error: control characters',
      };
    case 'invalid-utf8':
      return {
        body: errorBody(messenger, status, 'broken \u0001RAW\u0001 bytes', INVALID_UTF8),
        summary: 'hostile error: bytes that are not UTF-8',
      };
    case 'huge': {
      const chunk = `${HOSTILE_TEXT} `;
      const text = chunk.repeat(Math.ceil(size / chunk.length)).slice(0, size);
      return { body: errorBody(messenger, status, text), summary: `hostile error: ${size} characters` };
    }
    case 'not-json':
      return {
        body: concat([utf8.encode('boom\u0000 '), INVALID_UTF8, utf8.encode(' not json')]),
        summary: 'hostile error: a body that is not JSON',
      };
  }
}
