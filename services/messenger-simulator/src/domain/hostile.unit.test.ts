import { describe, expect, it } from 'vitest';
import { HOSTILE_TEXT, hostileAnswer, INVALID_UTF8 } from './hostile.js';

const strict = new TextDecoder('utf-8', { fatal: true });
const loose = new TextDecoder('utf-8');

const contains = (haystack: Uint8Array, needle: Uint8Array) =>
  Buffer.from(haystack).indexOf(Buffer.from(needle)) >= 0;

describe('hostile error answers', () => {
  it('controls: valid JSON in each messenger’s shape, its text holding NUL, controls, non-characters, lone surrogates', () => {
    const telegram = JSON.parse(strict.decode(hostileAnswer('telegram', 'controls', 400).body)) as Record<
      string,
      unknown
    >;
    expect(telegram).toEqual({ ok: false, error_code: 400, description: `Bad Request: ${HOSTILE_TEXT}` });
    for (const c of [
      '\u0000',
      '\u0007',
      '\u001b',
      '\u007f',
      '\u0085',
      '\ufffe',
      '\u{1fffe}',
      '\ud800',
      '\udc00',
    ])
      expect(telegram.description).toContain(c);
    const max = JSON.parse(strict.decode(hostileAnswer('max', 'controls', 503).body)) as Record<
      string,
      unknown
    >;
    expect(max).toEqual({ code: 'internal.error', message: HOSTILE_TEXT });
  });

  it('invalid-utf8: the bytes that are no UTF-8 sit inside the JSON string; read leniently, it parses', () => {
    const { body } = hostileAnswer('telegram', 'invalid-utf8', 403);
    expect(contains(body, INVALID_UTF8)).toBe(true);
    expect(() => strict.decode(body)).toThrow(TypeError);
    expect(JSON.parse(loose.decode(body))).toMatchObject({
      ok: false,
      error_code: 403,
      description: expect.stringMatching(/^Bad Request: broken \ufffd+ \ufffd+ bytes$/),
    });
    expect(JSON.parse(loose.decode(hostileAnswer('max', 'invalid-utf8', 400).body))).toMatchObject({
      code: 'proto.payload',
      message: expect.stringContaining('\ufffd'),
    });
  });

  it('huge: a text of the size asked for', () => {
    const { body, summary } = hostileAnswer('max', 'huge', 400, 100_000);
    const message = (JSON.parse(strict.decode(body)) as { message: string }).message;
    expect(message).toHaveLength(100_000);
    expect(message).toContain('\u0000');
    expect(summary).toBe('hostile error: 100000 characters');
  });

  it('not-json: a NUL and broken bytes that no JSON parser takes', () => {
    const { body } = hostileAnswer('telegram', 'not-json', 502);
    expect(body[4]).toBe(0);
    expect(contains(body, INVALID_UTF8)).toBe(true);
    expect(() => JSON.parse(loose.decode(body)) as unknown).toThrow(SyntaxError);
  });
});
