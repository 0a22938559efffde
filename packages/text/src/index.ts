// The one rule for text we store and send, and the one cleaner for text we did not write ourselves.
//
// A character no text may hold: a C0 or C1 control other than tab, line feed and carriage return (NUL
// above all: PostgreSQL's text and jsonb refuse it), a lone surrogate (no UTF-8 spelling; jsonb refuses
// its escape), and a non-character (U+FDD0-U+FDEF, and U+xFFFE, U+xFFFF of each of the 17 planes: "not
// for interchange"). The public API refuses such text at the door (422 `invalid_characters`); text from
// outside (a webhook endpoint's answer, a messenger's error, an update's fields) passes `cleanText`, which
// puts U+FFFD in place of each; and the event codec cleans any such character a producer let through.

declare const cleanTextBrand: unique symbol;

/**
 * Text without a character no text may hold, and as long as its producer chose at most: what `cleanText`
 * returns. Ports and event builders that take text from outside take this type, so an adapter cannot hand
 * them raw text without passing it through the cleaner.
 */
export type CleanText = string & { readonly [cleanTextBrand]: true };

// The refused characters of the Basic Multilingual Plane that are Unicode scalar values (controls, non-characters),
// the surrogates, and the astral non-characters as the characters themselves: no escape spells a code point above
// U+FFFF in both JavaScript's and Python's regular expressions.
const BMP_SCALARS =
  '\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f-\\u009f\\ufdd0-\\ufdef\\ufffe\\uffff';
const SURROGATES = '\\ud800-\\udfff';
const astralNonCharacters = Array.from({ length: 16 }, (_, i) =>
  String.fromCodePoint((i + 1) * 0x10000 + 0xfffe, (i + 1) * 0x10000 + 0xffff),
).join('');

/**
 * The characters no text may hold, as the inside of a regular expression's character class over code points
 * (a JavaScript RegExp with the `u` flag, Python's `re`).
 */
export const INVALID_CHARACTER_CLASS = `${BMP_SCALARS}${SURROGATES}${astralNonCharacters}`;

/**
 * The same without the lone surrogates, for JSON Schema patterns: a surrogate is no character of UTF-8 text (a
 * JSON string carries one only as a `\ud800` escape), and the regex engines of JSON Schema tools that read text
 * as Unicode scalar values (Rust's regex in jsonschema-rs, which schemathesis uses; Go's RE2) refuse a pattern
 * that names one. A document says in words that lone surrogates are refused too.
 */
export const INVALID_SCALAR_VALUE_CLASS = `${BMP_SCALARS}${astralNonCharacters}`;

const INVALID = new RegExp(`[${INVALID_CHARACTER_CLASS}]`, 'u');
const INVALID_ALL = new RegExp(`[${INVALID_CHARACTER_CLASS}]`, 'gu');
// The same, over UTF-16 code units: it also matches every surrogate pair, but a string it does not match (most
// text, all of ours) is clean without the slower code point matching.
const MAYBE_INVALID = new RegExp(`[${BMP_SCALARS}${SURROGATES}]`);

/** Words a person reads in a refusal, for the kinds of character the rule refuses. */
export const INVALID_CHARACTERS_RULE =
  'NUL and the other control characters but tab, line feed and carriage return, lone surrogates (U+D800-U+DFFF), and non-characters (U+FDD0-U+FDEF, and U+FFFE and U+FFFF of every plane)';

/** The first character of `text` no text may hold: its code point and its index (UTF-16 code units). */
export function firstInvalidCharacter(text: string): { codePoint: number; index: number } | undefined {
  const match = INVALID.exec(text);
  if (!match) return undefined;
  return { codePoint: match[0].codePointAt(0)!, index: match.index };
}

/** True when `text` holds no character text may not hold (whatever its length). */
export function isCleanText(text: string): text is CleanText {
  return !MAYBE_INVALID.test(text) || !INVALID.test(text);
}

/** "U+0000 (a control character)": a refused character, named for a person reading a refusal. */
export function describeInvalidCharacter(codePoint: number): string {
  const hex = `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
  if (codePoint >= 0xd800 && codePoint <= 0xdfff) return `${hex} (a lone surrogate)`;
  if (codePoint <= 0x9f) return `${hex} (a control character)`;
  return `${hex} (a non-character)`;
}

// Decoding that never throws: a byte sequence that is not UTF-8 decodes to U+FFFD, one for each maximal
// part of it (the WHATWG Encoding Standard's rule); a leading byte order mark is kept, not swallowed.
const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/**
 * Outside input as text we can store and send: valid Unicode (so valid UTF-8 once encoded), with U+FFFD in
 * place of every character no text may hold (NUL and the other controls but tab, line feed and carriage
 * return; lone surrogates; non-characters) and of every byte sequence that is not UTF-8, at most `maxLength`
 * UTF-16 code units long (JavaScript's `length`), cut between two characters, never inside a surrogate pair.
 * Everything else is kept as it came: white space, format characters (zero-width, bidi), emoji.
 *
 * Idempotent: cleaning clean text (with the same or a larger bound) gives it back unchanged. Reads at most
 * about `3 * maxLength` bytes or `maxLength` code units of its input, so a 10 MB answer costs no more than a
 * short one.
 */
export function cleanText(input: string | Uint8Array, maxLength: number): CleanText {
  if (!(maxLength >= 0)) throw new RangeError(`cleanText: maxLength must be 0 or more, not ${maxLength}`);
  // A code unit takes at most 3 bytes of UTF-8 (an astral character: 4 bytes for 2 units; a sequence that is
  // not UTF-8: 1 to 3 bytes for one U+FFFD). Four more bytes keep a sequence cut at the end of the slice out
  // of the first maxLength units.
  const text =
    typeof input === 'string'
      ? input
      : utf8.decode(input.subarray(0, Math.min(input.length, maxLength * 3 + 4)));
  return replaceInvalid(cutAtCharacter(text, maxLength)) as CleanText;
}

/** The first `maxLength` code units of `text`, one fewer when the last would be half of a surrogate pair. */
function cutAtCharacter(text: string, maxLength: number): string {
  if (text.length <= maxLength) return text;
  const last = text.charCodeAt(maxLength - 1);
  const next = text.charCodeAt(maxLength);
  const splitsPair = last >= 0xd800 && last <= 0xdbff && next >= 0xdc00 && next <= 0xdfff;
  return text.slice(0, splitsPair ? maxLength - 1 : maxLength);
}

/** U+FFFD in place of each character no text may hold (an astral non-character's two units become one). */
function replaceInvalid(text: string): string {
  return isCleanText(text) ? text : text.replace(INVALID_ALL, '\ufffd');
}

/** What a codec found and cleaned: the record's type and the path of the field (`event.value.errorDescription`). */
export interface UncleanText {
  messageType: string;
  field: string;
}

const uncleanListeners = new Set<(found: UncleanText) => void>();

/**
 * Tells `listener` of every string field an event codec had to clean while encoding: a producer put text it
 * did not clean on its way to the log. Services log it (service-kit's runService): it names a bug to fix.
 * Returns the function that stops listening.
 */
export function onUncleanText(listener: (found: UncleanText) => void): () => void {
  uncleanListeners.add(listener);
  return () => uncleanListeners.delete(listener);
}

/**
 * `value` with every string in it (at any depth: fields, oneof values, repeated fields) cleaned of the
 * characters no text may hold, each one cleaned reported. The same object when nothing needed cleaning (the
 * usual case: nothing is copied); otherwise a copy along the paths that changed, the caller's object untouched.
 */
export function withCleanStrings<T>(value: T, messageType: string): T {
  return cleanStrings(value, '', messageType) as T;
}

function cleanStrings(value: unknown, path: string, messageType: string): unknown {
  if (typeof value === 'string') {
    if (isCleanText(value)) return value;
    for (const listener of uncleanListeners) listener({ messageType, field: path });
    return value.replace(INVALID_ALL, '\ufffd');
  }
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array || value instanceof Date)
    return value;
  if (Array.isArray(value)) {
    const items = value as unknown[];
    let copy: unknown[] | undefined;
    for (let i = 0; i < items.length; i++) {
      const cleaned = cleanStrings(items[i], `${path}[${i}]`, messageType);
      if (cleaned !== items[i]) (copy ??= [...items])[i] = cleaned;
    }
    return copy ?? items;
  }
  const fields = value as Record<string, unknown>;
  let copy: Record<string, unknown> | undefined;
  for (const key in fields) {
    const item = fields[key];
    // Only what can hold a string is walked: numbers, booleans, enums and bytes are most of a record.
    if (typeof item !== 'string' && (typeof item !== 'object' || item === null)) continue;
    const cleaned = cleanStrings(item, path ? `${path}.${key}` : key, messageType);
    if (cleaned !== item) (copy ??= { ...fields })[key] = cleaned;
  }
  return copy ?? value;
}
