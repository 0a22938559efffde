import { createRegistryCache } from '@mds/registry-client';
import type { PersonKey } from './seal.js';

/** Where person keys come from: client-registry (its database there, its gRPC API everywhere else). */
export interface PersonKeyPort {
  /** The key of the person with this number at this company, made on first use. */
  obtain(companyId: string, phone: string): Promise<PersonKey>;
  /** A key by its id; `erased` once the person was forgotten (the key is gone for good). */
  get(companyId: string, keyId: string): Promise<PersonKey | 'erased'>;
}

export interface PersonKeyCache extends PersonKeyPort {
  /** Drops every cached key of a forgotten person (ClientForgotten), so nothing opens with it any more. */
  forgetSubject(companyId: string, subjectId: string): void;
  readonly size: number;
}

export interface PersonKeyCacheOptions {
  /** Entries kept (least recently used go first). Default 100,000: about 15 MB. */
  maxEntries?: number;
  /** How long a key is used without asking again. Default 60 s: the longest a forgotten key keeps opening. */
  ttlMs?: number;
  now?: () => number;
}

type Entry = { value: PersonKey | 'erased'; companyId: string };

/**
 * A bounded LRU of person keys in front of a port, for the hot path: a hit is two Map operations. Keys expire
 * after `ttlMs` (so a person forgotten elsewhere stops opening within it even without ClientForgotten);
 * "erased" never expires (a destroyed key never comes back). Concurrent misses of one key share one call.
 */
export function createPersonKeyCache(
  port: PersonKeyPort,
  options: PersonKeyCacheOptions = {},
): PersonKeyCache {
  const ttlMs = options.ttlMs ?? 60_000;
  // "erased" never expires: a destroyed key never comes back.
  const entries = createRegistryCache<Entry>({
    ttlMs: (entry) => (entry.value === 'erased' ? Number.POSITIVE_INFINITY : ttlMs),
    maxEntries: options.maxEntries ?? 100_000,
    touchOnRead: true,
    ...(options.now ? { now: options.now } : {}),
  });
  const write = (cacheKey: string, companyId: string, value: PersonKey | 'erased') =>
    entries.write(cacheKey, { value, companyId });
  const once = (cacheKey: string, companyId: string, load: () => Promise<PersonKey | 'erased'>) =>
    entries.load(cacheKey, async () => ({ value: await load(), companyId }));

  return {
    async obtain(companyId, phone) {
      const cacheKey = `p|${companyId}|${phone}`;
      const hit = entries.read(cacheKey);
      if (hit && hit.value !== 'erased') return hit.value;
      const key = (await once(cacheKey, companyId, () => port.obtain(companyId, phone))).value as PersonKey;
      write(cacheKey, companyId, key);
      write(`k|${companyId}|${key.keyId}`, companyId, key);
      return key;
    },
    async get(companyId, keyId) {
      const cacheKey = `k|${companyId}|${keyId}`;
      const hit = entries.read(cacheKey);
      if (hit) return hit.value;
      const { value } = await once(cacheKey, companyId, () => port.get(companyId, keyId));
      write(cacheKey, companyId, value);
      return value;
    },
    forgetSubject(companyId, subjectId) {
      for (const [cacheKey, entry] of entries.entries()) {
        if (entry.companyId !== companyId || entry.value === 'erased') continue;
        if (entry.value.subjectId !== subjectId) continue;
        entries.forget(cacheKey);
        if (cacheKey.startsWith('k|')) write(cacheKey, companyId, 'erased');
      }
    },
    get size() {
      return entries.size;
    },
  };
}
