import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** What an Idempotency-Key's claim is stored with, and how a later request is told to be the same one. */
export interface RequestFingerprint {
  /** Stored with a new claim: `h1:` and the hex HMAC-SHA-256 of the request under the current key. */
  readonly value: string;
  /** Whether a stored fingerprint is this request's. */
  matches(stored: string): boolean;
}

/** Fingerprints of requests (an operation and its body) under the gateway's keys. */
export type Fingerprinter = (operation: string, body: unknown) => RequestFingerprint;

const KEYED = 'h1:';

const sameHex = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/**
 * Fingerprints keyed with a secret outside the database (IDEMPOTENCY_FINGERPRINT_KEYS): a copy of
 * `idempotency_keys` does not let anyone test guesses of a phone number and a text against them, as an unkeyed
 * hash would (a one-time code's template and a list of numbers are guesses enough). The first key makes new
 * fingerprints; every key matches, so a key is rotated by putting a new one first and dropping the old one
 * after IDEMPOTENCY_TTL_HOURS. A fingerprint stored before they were keyed (a bare SHA-256, hex) still matches
 * its request, so a retry in flight across the upgrade is answered as before; none is older than the TTL a day
 * after the upgrade.
 */
export function fingerprinter(keys: readonly string[]): Fingerprinter {
  if (keys.length === 0) throw new Error('at least one fingerprint key is required');
  return (operation, body) => {
    const request = `${operation}\n${JSON.stringify(body)}`;
    const under = (key: string) => `${KEYED}${createHmac('sha256', key).update(request).digest('hex')}`;
    const value = under(keys[0]!);
    return {
      value,
      matches(stored) {
        if (!stored.startsWith(KEYED))
          return sameHex(createHash('sha256').update(request).digest('hex'), stored);
        return sameHex(value, stored) || keys.slice(1).some((key) => sameHex(under(key), stored));
      },
    };
  };
}
