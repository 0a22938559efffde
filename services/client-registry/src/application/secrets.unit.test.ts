import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { needsReseal, ownerOf, parseKeyring, reseal, seal, unseal } from './secrets.js';

const k1 = `k1:${randomBytes(32).toString('base64')}`;
const k2 = `k2:${randomBytes(32).toString('base64')}`;
const owner = ownerOf('bot-token', 'company-a', 'bot-1');

describe('sealed secrets bound to their owner', () => {
  it('open for their owner only', () => {
    const keyring = parseKeyring(k1);
    const sealed = seal(keyring, '7000000001:token', owner);
    expect(sealed.format).toBe(1);
    expect(unseal(keyring, sealed, owner)).toBe('7000000001:token');
    expect(() => unseal(keyring, sealed, ownerOf('bot-token', 'company-b', 'bot-1'))).toThrow();
    expect(() => unseal(keyring, sealed, ownerOf('webhook-secret', 'company-a', 'bot-1'))).toThrow();
    expect(() => unseal(keyring, sealed)).toThrow(/bound to an owner/);
  });

  it('sealed the old way (no associated data) still open, and reseal binds them under the current key', () => {
    const old = parseKeyring(k1);
    const legacy = seal(old, 'whsec_abc');
    expect(legacy.format).toBeUndefined();
    expect(unseal(old, legacy, owner)).toBe('whsec_abc');
    const rotated = parseKeyring(`${k2},${k1}`);
    expect(needsReseal(rotated, legacy)).toBe(true);
    const renewed = reseal(rotated, legacy, owner);
    expect(renewed).toMatchObject({ keyId: 'k2', format: 1 });
    expect(needsReseal(rotated, renewed)).toBe(false);
    // k1 dropped: the renewed one opens, the old one cannot.
    const retired = parseKeyring(k2);
    expect(unseal(retired, renewed, owner)).toBe('whsec_abc');
    expect(() => unseal(retired, legacy, owner)).toThrow(/unknown key k1/);
  });

  it('refuse a truncated tag or a wrong-length nonce', () => {
    const keyring = parseKeyring(k1);
    const sealed = seal(keyring, 'secret value', owner);
    const data = Buffer.from(sealed.ciphertext, 'base64');
    // GCM accepts tags as short as 4 bytes unless told the length: a forger's shortcut.
    const truncated = { ...sealed, ciphertext: data.subarray(0, data.length - 4).toString('base64') };
    expect(() => unseal(keyring, truncated, owner)).toThrow();
    expect(() =>
      unseal(keyring, { ...sealed, ciphertext: data.subarray(0, 10).toString('base64') }, owner),
    ).toThrow(/16-byte tag/);
    expect(() => unseal(keyring, { ...sealed, nonce: randomBytes(8).toString('base64') }, owner)).toThrow(
      /nonce/,
    );
    const flipped = Buffer.from(data);
    flipped[0]! ^= 1;
    expect(() => unseal(keyring, { ...sealed, ciphertext: flipped.toString('base64') }, owner)).toThrow();
  });
});
