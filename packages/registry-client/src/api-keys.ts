import { createHash } from 'node:crypto';
import { apiKeyIdOf } from '@mds/contracts';
import type { ClientTlsFiles } from '@mds/grpc';
import { createRegistryCache } from './cache.js';
import { createRegistryClient, type Caller, type Resolution } from './client.js';

export interface ApiKeyResolver {
  /** The caller of a key already known good, from memory only (no lookup): undefined otherwise. */
  cached(apiKey: string): Caller | undefined;
  /** Throws a RegistryError when the registry cannot be asked (kind `busy`: too many lookups in flight). */
  resolve(apiKey: string): Promise<Resolution>;
  /** Lookups waiting for the registry now (for metrics). */
  readonly inFlight: number;
  close(): void;
}

export interface ApiKeyResolverOptions {
  /** Asks the registry about a well-formed key; the gRPC client in production. */
  ask: (apiKey: string) => Promise<Resolution>;
  ttlMs: number;
  negativeTtlMs: number;
  /** Known-good keys remembered (by SHA-256). */
  maxEntries?: number;
  /** Refused keys remembered (by key id), in a cache of their own: a flood of bad keys never evicts a good one. */
  maxNegativeEntries?: number;
  /** Registry lookups in flight at once; one more is refused with a `busy` RegistryError (the caller answers 503). */
  maxConcurrentLookups?: number;
  now?: () => number;
  close?: () => void;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('base64url');

/**
 * API key -> company and scopes, asking client-registry as little as possible:
 * - a malformed key (not `mds_<id>_<secret>`, see @mds/contracts) is refused locally, asking no one;
 * - a known-good key is remembered for `ttlMs` by its SHA-256 (a revoked key stops working within that);
 * - a refused key is remembered for `negativeTtlMs` under its key id, with the SHA-256 of the key refused, in a
 *   separate bounded cache: the same bad key again is refused from memory, while another secret under that id
 *   (the real key, whose id is visible in listings) is still asked about, so an attacker cannot lock a real key
 *   out by sending wrong secrets under its id;
 * - at most `maxConcurrentLookups` lookups wait for the registry at once; beyond that a `busy` RegistryError, at
 *   once (no queue: under a flood a queue only adds latency and memory; the 503 says when to retry).
 * Concurrent lookups of one key share a call. Keys themselves are never kept.
 */
export function createApiKeyResolver(o: ApiKeyResolverOptions): ApiKeyResolver {
  const now = o.now ?? Date.now;
  // Good keys by hash (only `ok` resolutions are written); the lookups of keys by hash share this cache.
  const known = createRegistryCache<Resolution>({
    ttlMs: o.ttlMs,
    maxEntries: o.maxEntries ?? 10_000,
    maxConcurrentLookups: o.maxConcurrentLookups ?? 32,
    now,
  });
  const refused = createRegistryCache<{ keyHash: string; reason: 'unknown' | 'revoked' }>({
    ttlMs: o.negativeTtlMs,
    maxEntries: o.maxNegativeEntries ?? 10_000,
    now,
  });
  const cachedByHash = (hash: string): Caller | undefined => {
    const hit = known.read(hash);
    return hit?.ok ? hit.caller : undefined;
  };

  return {
    cached: (apiKey) => cachedByHash(sha256(apiKey)),
    get inFlight() {
      return known.inFlight;
    },
    async resolve(apiKey) {
      const keyId = apiKeyIdOf(apiKey);
      if (!keyId) return { ok: false, reason: 'malformed' };
      const hash = sha256(apiKey);
      const caller = cachedByHash(hash);
      if (caller) return { ok: true, caller };
      const no = refused.read(keyId);
      if (no && no.keyHash === hash) return { ok: false, reason: no.reason };

      const resolution = await known.load(hash, () => o.ask(apiKey));
      if (resolution.ok) known.write(hash, resolution);
      else if (resolution.reason !== 'malformed')
        refused.write(keyId, { keyHash: hash, reason: resolution.reason });
      return resolution;
    },
    close: () => o.close?.(),
  };
}

/** The registry's ResolveApiKey over gRPC: NOT_FOUND is an unknown key, PERMISSION_DENIED 'revoked API key' a revoked one. */
export function registryKeyLookup(o: {
  address: string;
  token: string;
  /** TLS to client-registry; unset: plaintext. */
  tls?: ClientTlsFiles | undefined;
}): {
  ask: (apiKey: string) => Promise<Resolution>;
  close: () => void;
} {
  const client = createRegistryClient({ ...o, deadlineMs: 2_000 });
  return { ask: (apiKey) => client.resolveApiKey(apiKey), close: () => client.close() };
}
