import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  cleanText,
  describeInvalidCharacter,
  firstInvalidCharacter,
  INVALID_CHARACTER_CLASS,
  INVALID_SCALAR_VALUE_CLASS,
  isCleanText,
} from './index.js';

/** The rule, written out from the definitions (not from the module's regular expression). */
function refused(codePoint: number): boolean {
  return (
    (codePoint < 0x20 && codePoint !== 0x09 && codePoint !== 0x0a && codePoint !== 0x0d) ||
    (codePoint >= 0x7f && codePoint <= 0x9f) ||
    (codePoint >= 0xd800 && codePoint <= 0xdfff) ||
    (codePoint >= 0xfdd0 && codePoint <= 0xfdef) ||
    (codePoint & 0xfffe) === 0xfffe
  );
}

/** The model: every refused character (a lone surrogate is one) replaced by one U+FFFD. */
const model = (text: string) => [...text].map((c) => (refused(c.codePointAt(0)!) ? '\ufffd' : c)).join('');

const wellFormedUtf8 = (text: string) =>
  new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(new TextEncoder().encode(text)) === text;

const hostile = [
  '\0',
  '\x07',
  '\x1b',
  '\x7f',
  '\x85',
  '\x9f',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ufdd0',
  '\ufdef',
  '\ufffe',
  '\uffff',
  '\u{1fffe}',
  '\u{10ffff}',
  '\t',
  '\n',
  '\r',
  ' ',
  'a',
  'я',
  '😀',
  '\u200b',
  '\u202e',
  '\ufeff',
  '\ufffd',
];

/** Strings of any UTF-16 code units (lone surrogates, pairs, controls...), of the hostile pieces, of any code points. */
const anyString = fc.oneof(
  fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 300 }).map((u) => String.fromCharCode(...u)),
  fc.array(fc.constantFrom(...hostile), { maxLength: 200 }).map((parts) => parts.join('')),
  fc.string({ unit: 'binary', maxLength: 200 }),
);

/** Bytes at random, and bytes made of UTF-8 and not-UTF-8 pieces (overlong, CESU-8 surrogates, cut sequences). */
const anyBytes = fc.oneof(
  fc.uint8Array({ maxLength: 600 }),
  fc
    .array(
      fc.constantFrom(
        [0x00],
        [0x41],
        [0xff],
        [0xfe],
        [0x80],
        [0xc0, 0x80],
        [0xc3, 0x28],
        [0xe2, 0x82],
        [0xed, 0xa0, 0x80],
        [0xf0, 0x9f, 0x98],
        [0xf0, 0x9f, 0x98, 0x80],
        [0xf4, 0x90, 0x80, 0x80],
        [0xef, 0xbf, 0xbe],
        [0xd0, 0xaf],
        [0x0a],
      ),
      { maxLength: 200 },
    )
    .map((pieces) => Uint8Array.from(pieces.flat())),
);

const bound = fc.integer({ min: 0, max: 400 });

describe('cleanText, for any input', () => {
  it('gives valid UTF-8 with no character text may hold, NUL above all, within the bound', () => {
    fc.assert(
      fc.property(fc.oneof(anyString, anyBytes), bound, (input, max) => {
        const out = cleanText(input, max);
        expect(wellFormedUtf8(out)).toBe(true);
        expect(out).not.toContain('\0');
        expect([...out].some((c) => refused(c.codePointAt(0)!))).toBe(false);
        expect(isCleanText(out)).toBe(true);
        expect(out.length).toBeLessThanOrEqual(max);
      }),
      { numRuns: 2_000 },
    );
  });

  it('is idempotent, with the same bound or a larger one', () => {
    fc.assert(
      fc.property(fc.oneof(anyString, anyBytes), bound, bound, (input, max, more) => {
        const once = cleanText(input, max);
        expect(cleanText(once, max)).toBe(once);
        expect(cleanText(once, max + more)).toBe(once);
        expect(cleanText(new TextEncoder().encode(once), max)).toBe(once);
      }),
      { numRuns: 2_000 },
    );
  });

  it('replaces each refused character with one U+FFFD and keeps everything else, in order', () => {
    fc.assert(
      fc.property(anyString, (input) => {
        expect(cleanText(input, 10_000)).toBe(model(input));
      }),
      { numRuns: 2_000 },
    );
  });

  it('decodes bytes as UTF-8, U+FFFD for what is not, whatever part of a long input it had to read', () => {
    fc.assert(
      fc.property(anyBytes, bound, (bytes, max) => {
        const decoded = new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
        expect(cleanText(bytes, max)).toBe(cleanText(decoded, max));
      }),
      { numRuns: 2_000 },
    );
  });

  it('cuts long input between characters, never inside a surrogate pair, then cleans what it kept', () => {
    fc.assert(
      fc.property(anyString, bound, (input, max) => {
        const cut = cleanText(input, max);
        const splitsPair = /^[\ud800-\udbff][\udc00-\udfff]$/.test(input.slice(max - 1, max + 1));
        const kept = input.length <= max ? input : input.slice(0, splitsPair ? max - 1 : max);
        expect(cut).toBe(model(kept));
      }),
      { numRuns: 2_000 },
    );
    expect(cleanText('ab😀', 3)).toBe('ab');
    expect(cleanText('ab😀', 4)).toBe('ab😀');
    expect(cleanText('ab\ud800\ud800', 3)).toBe('ab\ufffd');
  });
});

describe('cleanText, for printable input', () => {
  it('gives it back unchanged', () => {
    const printable = fc.string({ unit: 'grapheme', maxLength: 200 });
    fc.assert(
      fc.property(printable, (text) => {
        expect(cleanText(text, text.length)).toBe(text);
        expect(cleanText(new TextEncoder().encode(text), text.length)).toBe(text);
      }),
      { numRuns: 2_000 },
    );
    const kept = 'Line one\r\n\tline two: Привет, 世界 😀 \u200b\u202e\ufeff \ufffd';
    expect(cleanText(kept, 1_000)).toBe(kept);
  });
});

describe('cleanText on the inputs that broke us', () => {
  it('an endpoint answering `boom\\0`, invalid UTF-8 and a lone surrogate', () => {
    expect(cleanText(Buffer.from('boom\0'), 512)).toBe('boom\ufffd');
    expect(cleanText(Uint8Array.from([0x6f, 0x6b, 0xff, 0xc0, 0x80, 0xed, 0xa0, 0x80]), 512)).toBe(
      'ok\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd',
    );
    expect(cleanText('nul \u0000 bel \x07 esc \x1b lone \ud800 nc \ufffe \u{10ffff}', 512)).toBe(
      'nul \ufffd bel \ufffd esc \ufffd lone \ufffd nc \ufffd \ufffd',
    );
  });

  it('a 10 MB answer reads only what the bound needs', () => {
    const huge = Buffer.alloc(10 * 1024 * 1024, 'é');
    const out = cleanText(huge, 512);
    expect(out).toBe('é'.repeat(512));
    expect(cleanText('x'.repeat(10 * 1024 * 1024), 512)).toHaveLength(512);
  });

  it('keeps a byte order mark at the start (it is a character of the answer, not a signature)', () => {
    expect(cleanText(Uint8Array.from([0xef, 0xbb, 0xbf, 0x41]), 10)).toBe('\ufeffA');
  });

  it('refuses a bound that is no length', () => {
    expect(() => cleanText('x', -1)).toThrow(RangeError);
    expect(() => cleanText('x', Number.NaN)).toThrow(RangeError);
  });
});

describe('the rule', () => {
  it('names the first refused character and where it is', () => {
    expect(firstInvalidCharacter('ok')).toBeUndefined();
    expect(firstInvalidCharacter('a😀\u0007')).toEqual({ codePoint: 7, index: 3 });
    expect(firstInvalidCharacter('😀\ud800')).toEqual({ codePoint: 0xd800, index: 2 });
    expect(firstInvalidCharacter('x\u{10fffe}')).toEqual({ codePoint: 0x10fffe, index: 1 });
    expect(describeInvalidCharacter(0)).toBe('U+0000 (a control character)');
    expect(describeInvalidCharacter(0xdc00)).toBe('U+DC00 (a lone surrogate)');
    expect(describeInvalidCharacter(0x1fffe)).toBe('U+1FFFE (a non-character)');
  });

  it('is one character class that JavaScript reads by code points as the model says, for every code point', () => {
    const refusedOne = new RegExp(`^[${INVALID_CHARACTER_CLASS}]$`, 'u');
    const refusedScalar = new RegExp(`^[${INVALID_SCALAR_VALUE_CLASS}]$`, 'u');
    const wrong: string[] = [];
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      const c = String.fromCodePoint(cp);
      const surrogate = cp >= 0xd800 && cp <= 0xdfff;
      if (refusedOne.test(c) !== refused(cp)) wrong.push(`U+${cp.toString(16)}`);
      if (refusedScalar.test(c) !== (refused(cp) && !surrogate)) wrong.push(`scalar U+${cp.toString(16)}`);
    }
    expect(wrong).toEqual([]);
  });
});
