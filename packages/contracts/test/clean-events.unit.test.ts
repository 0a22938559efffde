import { afterEach, describe, expect, it } from 'vitest';
import { onUncleanText, withCleanStrings, type UncleanText } from '../src/index.js';
import { sampleRecord, streams } from './fixtures.js';

// The last line of defence, for every string field of every event of every stream (the samples fill them
// all, and the compiler demands a sample for each event): whatever a producer forgot to clean, the codec
// writes no character text may hold, and says which field held one.

const HOSTILE = 'a\u0000b\ud800c\x1bd\ufffe\u{10ffff}e';
const CLEANED = 'a\ufffdb\ufffdc\ufffdd\ufffd\ufffde';

type Path = (string | number)[];

/** The path of every string in a record (the oneof's `$case` aside: the codec's own, never outside text). */
function stringPaths(value: unknown, path: Path = []): Path[] {
  if (typeof value === 'string') return path.at(-1) === '$case' ? [] : [path];
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array || value instanceof Date)
    return [];
  return Object.entries(value).flatMap(([key, item]) =>
    stringPaths(item, [...path, Array.isArray(value) ? Number(key) : key]),
  );
}

function at(value: unknown, path: Path): unknown {
  return path.reduce<unknown>((v, key) => (v as Record<string | number, unknown>)[key], value);
}

function withValue(value: unknown, path: Path, replacement: string): unknown {
  if (path.length === 0) return replacement;
  const [key, ...rest] = path;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<
    string | number,
    unknown
  >;
  copy[key!] = withValue(copy[key!], rest, replacement);
  return copy;
}

const cases = streams.flatMap(({ codec, samples }) =>
  Object.entries(samples).flatMap(([eventCase, sample]) => {
    const record = sampleRecord(eventCase, sample);
    return stringPaths(record).map(
      (path) => [`${eventCase}.${path.join('.')}`, codec, record, path] as const,
    );
  }),
);

let stop: (() => void) | undefined;
afterEach(() => stop?.());

describe('every event codec', () => {
  it('has string fields to guard in every stream (the samples are filled)', () => {
    expect(cases.length).toBeGreaterThan(100);
  });

  it.each(cases)(
    'writes %s without a character text may hold, and reports it',
    (_name, codec, record, path) => {
      const seen: UncleanText[] = [];
      stop = onUncleanText((found) => seen.push(found));
      const dirty = withValue(record, path, HOSTILE) as typeof record;
      const decoded = codec.decode(codec.encode(dirty));
      expect(at(decoded, path)).toBe(CLEANED);
      expect(seen).toEqual([
        { messageType: codec.messageType, field: path.join('.').replace(/\.(\d+)/g, '[$1]') },
      ]);
      // The producer's own object is left as it was.
      expect(at(dirty, path)).toBe(HOSTILE);
    },
  );

  it('leaves clean records alone (not copied) and reports nothing (the wire fixtures pin their bytes)', () => {
    const seen: UncleanText[] = [];
    stop = onUncleanText((found) => seen.push(found));
    for (const [, codec, record] of cases) {
      expect(withCleanStrings(record, codec.messageType)).toBe(record);
      codec.encode(record);
    }
    expect(seen).toEqual([]);
  });
});
