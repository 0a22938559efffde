import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { secretKeyOf } from '@mds/personal-data';
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

const NONCE_BYTES = 12;
const TAG_BYTES = 16;

/** A sealed secret's format: 0 was sealed without associated data (before owners were bound), 1 with it. */
export const SEALED_WITH_OWNER = 1;

/**
 * The associated data that binds a sealed secret to its owner: a ciphertext copied to another company's
 * bot or endpoint (by a database write, a restore mix-up) fails to open there instead of being used.
 * Generic: any `purpose` (a bot token, a webhook signing secret, ...) and owner path.
 */
export function ownerOf(purpose: string, ...owner: string[]): string {
  return ['mds', 'v1', purpose, ...owner].join(':');
}

/** AES-256-GCM under the current key, bound to `owner` (see ownerOf) when given. */
export function seal(keyring: Keyring, plaintext: string, owner?: string): SealedSecret {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', secretKeyOf(keyring.keys.get(keyring.currentId)!), nonce, {
    authTagLength: TAG_BYTES,
  });
  if (owner !== undefined) cipher.setAAD(Buffer.from(owner, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return {
    keyId: keyring.currentId,
    nonce: nonce.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    ...(owner !== undefined ? { format: SEALED_WITH_OWNER } : {}),
  };
}

/**
 * Opens a sealed secret of `owner`. One sealed with its owner opens only for that owner; one sealed before
 * owners were bound (format 0) opens as it always did, until `reseal` upgrades it. The nonce must be 12
 * bytes and the tag the full 16: GCM would otherwise accept a truncated tag (as short as 4 bytes).
 */
export function unseal(keyring: Keyring, sealed: SealedSecret, owner?: string): string {
  const key = keyring.keys.get(sealed.keyId);
  if (!key) throw new Error(`secret sealed with unknown key ${sealed.keyId}`);
  const nonce = Buffer.from(sealed.nonce, 'base64');
  const data = Buffer.from(sealed.ciphertext, 'base64');
  if (nonce.length !== NONCE_BYTES) throw new Error(`sealed secret has a ${nonce.length}-byte nonce, not 12`);
  if (data.length < TAG_BYTES) throw new Error('sealed secret is shorter than its 16-byte tag');
  const decipher = createDecipheriv('aes-256-gcm', secretKeyOf(key), nonce, { authTagLength: TAG_BYTES });
  if ((sealed.format ?? 0) === SEALED_WITH_OWNER) {
    if (owner === undefined) throw new Error('sealed secret is bound to an owner, and none was named');
    decipher.setAAD(Buffer.from(owner, 'utf8'));
  }
  decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
  return Buffer.concat([
    decipher.update(data.subarray(0, data.length - TAG_BYTES)),
    decipher.final(),
  ]).toString('utf8');
}

/** True when `sealed` is not yet under the current key and bound to its owner: `reseal` would renew it. */
export function needsReseal(keyring: Keyring, sealed: SealedSecret): boolean {
  return sealed.keyId !== keyring.currentId || (sealed.format ?? 0) !== SEALED_WITH_OWNER;
}

/** Opens `sealed` (any known key, either format) and seals it again under the current key, bound to `owner`. */
export function reseal(keyring: Keyring, sealed: SealedSecret, owner: string): SealedSecret {
  return seal(keyring, unseal(keyring, sealed, owner), owner);
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
