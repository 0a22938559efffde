import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { fingerprinter } from './fingerprint.js';

const KEY = 'k'.repeat(32);
const NEXT = 'n'.repeat(32);
const body = { phone_number: '79161234567', text: 'Your code is 4711', service: 'telegram' };

describe('request fingerprints', () => {
  it('are keyed: no hash of the number and text alone, and another key gives another fingerprint', () => {
    const unkeyed = createHash('sha256')
      .update(`POST /send\n${JSON.stringify(body)}`)
      .digest('hex');
    const mine = fingerprinter([KEY])('POST /send', body);
    expect(mine.value).toMatch(/^h1:[0-9a-f]{64}$/);
    expect(mine.value).not.toContain(unkeyed);
    expect(fingerprinter([NEXT])('POST /send', body).value).not.toBe(mine.value);
  });

  it('match the same request only: another body or operation is another request', () => {
    const stored = fingerprinter([KEY])('POST /send', body).value;
    expect(fingerprinter([KEY])('POST /send', { ...body }).matches(stored)).toBe(true);
    expect(fingerprinter([KEY])('POST /send', { ...body, text: 'Your code is 4712' }).matches(stored)).toBe(
      false,
    );
    expect(fingerprinter([KEY])('POST /change_phone', body).matches(stored)).toBe(false);
  });

  it('match across a key rotation (the old key second) and what the previous build stored (a bare SHA-256)', () => {
    const underOld = fingerprinter([KEY])('POST /send', body).value;
    const rotated = fingerprinter([NEXT, KEY])('POST /send', body);
    expect(rotated.value).toBe(fingerprinter([NEXT])('POST /send', body).value);
    expect(rotated.matches(underOld)).toBe(true);
    expect(fingerprinter([NEXT])('POST /send', body).matches(underOld)).toBe(false);
    const legacy = createHash('sha256')
      .update(`POST /send\n${JSON.stringify(body)}`)
      .digest('hex');
    expect(rotated.matches(legacy)).toBe(true);
    expect(fingerprinter([KEY])('POST /send', { ...body, text: 'other' }).matches(legacy)).toBe(false);
  });
});
