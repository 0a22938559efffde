import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { SealedSecret } from '../domain/accounts.js';

/** AES-256-GCM keys by id; the first is the one new secrets are sealed with, the others still open old ones. */
export interface Keyring {
  currentId: string;
  keys: Map<string, Buffer>;
}

/** "k2:<base64 32 bytes>,k1:<base64 32 bytes>" -> keyring (first is current). */
export function parseKeyring(spec: string): Keyring {
  const keys = new Map<string, Buffer>();
  let currentId = '';
  for (const entry of spec
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean)) {
    const [id, material] = entry.split(':');
    const key = Buffer.from(material ?? '', 'base64');
    if (!id || key.length !== 32)
      throw new Error('each encryption key is "<id>:<base64 of 32 random bytes>"');
    keys.set(id, key);
    currentId ||= id;
  }
  if (!currentId) throw new Error('at least one encryption key is needed');
  return { currentId, keys };
}

export function seal(keyring: Keyring, plaintext: string): SealedSecret {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyring.keys.get(keyring.currentId)!, nonce);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return {
    keyId: keyring.currentId,
    nonce: nonce.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
  };
}

export function unseal(keyring: Keyring, sealed: SealedSecret): string {
  const key = keyring.keys.get(sealed.keyId);
  if (!key) throw new Error(`secret sealed with unknown key ${sealed.keyId}`);
  const data = Buffer.from(sealed.ciphertext, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.nonce, 'base64'));
  decipher.setAuthTag(data.subarray(data.length - 16));
  return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString(
    'utf8',
  );
}

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey).digest('hex');
}

/**
 * A new API key: `mds_<key id>_<43 chars of 256 random bits>` (API_KEY_PATTERN in @mds/contracts). Only its SHA-256 is kept; the id lets a
 * lookup find the one stored hash to compare with, in constant time.
 */
export function newApiKey(): { keyId: string; apiKey: string; keyHash: string; keyPrefix: string } {
  const keyId = randomBytes(8).toString('hex').slice(0, 12);
  const apiKey = `mds_${keyId}_${randomBytes(32).toString('base64url')}`;
  // The prefix names the key in listings: `mds_<key id>_`, no character of the secret part.
  return { keyId, apiKey, keyHash: hashApiKey(apiKey), keyPrefix: `mds_${keyId}_` };
}

export { apiKeyIdOf as keyIdOf } from '@mds/contracts';

export function apiKeyMatches(apiKey: string, storedHash: string): boolean {
  const presented = Buffer.from(hashApiKey(apiKey), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

/** A Standard Webhooks signing secret: whsec_ + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
