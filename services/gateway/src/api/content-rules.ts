// What the gateway accepts as a message's text and buttons, beyond their types: pure checks the zod schemas
// (schemas.ts) apply, so they flow into the OpenAPI document and the 422 problems alike.

/**
 * Characters that show nothing: white space (with the BOM), format characters (zero-width space and
 * (non-)joiners, word joiner, bidi marks and overrides, soft hyphen, invisible operators, tags...), controls,
 * the combining grapheme joiner, and the letters drawn blank (Hangul fillers, the braille blank).
 */
const INVISIBLE = /^[\p{White_Space}\p{Cf}\p{Cc}\u034F\u115F\u1160\u3164\uFFA0\u2800]*$/u;

/** True when the text would show nothing at all: empty, or only white space and invisible characters. */
export function showsNothing(text: string): boolean {
  return INVISIBLE.test(text);
}

/**
 * A text's length as the messengers count it: UTF-16 code units (JavaScript's `length`), so an emoji outside
 * the Basic Multilingual Plane counts 2. Telegram counts its 4096 after entity parsing, in UTF-16 code units
 * (the unit its entity offsets use); our texts are plain (no parse_mode), so parsing removes nothing. MAX
 * answers `Field 'text' size (N) must be at most 4000`, the size of its server's (Java) string: UTF-16 code
 * units too (see /work/shared/reference/max-bot-api.md and telegram-bot-api.md).
 */
export function messengerLength(text: string): number {
  return text.length;
}

export type UrlCheck = { ok: true; href: string } | { ok: false; code: string; message: string };

/** The longest button URL stored: MAX takes at most 2048 characters. */
export const MAX_URL_LENGTH = 2048;

// Controls (NUL, tab, line breaks, DEL...) and format characters (zero-width, bidi overrides): the URL parser
// drops some silently (tab, CR, LF) and the others make a link read differently from where it goes.
const CONTROL_OR_FORMAT = /[\p{Cc}\p{Cf}]/u;

/**
 * A button URL as it is stored and sent: an absolute http(s) URL without userinfo, in the WHATWG URL's
 * normalized form (`url.href`: lower-case scheme and host, punycode, default port dropped, dots resolved,
 * unsafe characters percent-encoded), so what is checked is exactly what the messenger gets.
 */
export function normalizeButtonUrl(raw: string): UrlCheck {
  if (CONTROL_OR_FORMAT.test(raw)) {
    return {
      ok: false,
      code: 'url_control_characters',
      message:
        'Control or invisible characters (NUL, tab, line breaks, zero-width, bidi) are not allowed in a URL',
    };
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, code: 'invalid_url', message: 'An absolute http:// or https:// URL' };
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !url.hostname) {
    return { ok: false, code: 'invalid_url', message: 'An absolute http:// or https:// URL' };
  }
  if (url.username || url.password) {
    return {
      ok: false,
      code: 'url_userinfo',
      message: 'A URL with a user name or password ("user@host") is not allowed',
    };
  }
  if (url.href.length > MAX_URL_LENGTH) {
    return {
      ok: false,
      code: 'url_too_long',
      message: `At most ${MAX_URL_LENGTH} characters once normalized`,
    };
  }
  return { ok: true, href: url.href };
}
