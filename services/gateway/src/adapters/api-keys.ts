import { createHash } from 'node:crypto';
import { singleFlightCache } from '@mds/async';
import { apiKeyIdOf, effectiveScopes, registryV1, type ApiKeyScope } from '@mds/contracts';
import { clientChannel, grpc, isGrpcError, unary, type ClientTlsFiles } from '@mds/grpc';

export interface Caller {
  companyId: string;
  keyId: string;
  scopes: readonly ApiKeyScope[];
}

export type Resolution =
  { ok: true; caller: Caller } | { ok: false; reason: 'malformed' | 'unknown' | 'revoked' };

/** The registry could not be asked: the gateway cannot tell a good key from a bad one right now. */
export class RegistryUnavailableError extends Error {
  override readonly name = 'RegistryUnavailableError';
}

/** As many lookups as allowed are already waiting for the registry: this one is not started. */
export class LookupsBusyError extends Error {
  override readonly name = 'LookupsBusyError';
}

export interface ApiKeyResolver {
  /** The caller of a key already known good, from memory only (no lookup): undefined otherwise. */
  cached(apiKey: string): Caller | undefined;
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
  /** Registry lookups in flight at once; one more is refused with LookupsBusyError (the caller answers 503). */
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
 * - at most `maxConcurrentLookups` lookups wait for the registry at once; beyond that LookupsBusyError, at once
 *   (no queue: under a flood a queue only adds latency and memory; the 503 says when to retry).
 * Concurrent lookups of one key share a call. Keys themselves are never kept.
 */
export function createApiKeyResolver(o: ApiKeyResolverOptions): ApiKeyResolver {
  const now = o.now ?? Date.now;
  const maxConcurrent = o.maxConcurrentLookups ?? 32;
  const maxNegative = o.maxNegativeEntries ?? 10_000;
  let inFlight = 0;
  const known = new Map<string, { caller: Caller; expiresAt: number }>();
  const refused = new Map<string, { keyHash: string; reason: 'unknown' | 'revoked'; expiresAt: number }>();

  // The lookup gets the key through `pending` (the cache is keyed by its hash).
  const pending = new Map<string, string>();
  const lookups = singleFlightCache<Resolution>({
    lookup: async (hash) => {
      const apiKey = pending.get(hash)!;
      if (inFlight >= maxConcurrent) throw new LookupsBusyError('too many API key lookups in flight');
      inFlight++;
      try {
        return await o.ask(apiKey);
      } finally {
        inFlight--;
      }
    },
    // Only shares concurrent lookups; what is remembered lives in `known` and `refused`.
    ttlMs: 0,
    capacity: maxConcurrent * 2,
    now,
  });

  const cachedByHash = (hash: string): Caller | undefined => {
    const hit = known.get(hash);
    if (!hit) return undefined;
    if (hit.expiresAt > now()) return hit.caller;
    known.delete(hash);
    return undefined;
  };

  return {
    cached: (apiKey) => cachedByHash(sha256(apiKey)),
    get inFlight() {
      return inFlight;
    },
    async resolve(apiKey) {
      const keyId = apiKeyIdOf(apiKey);
      if (!keyId) return { ok: false, reason: 'malformed' };
      const hash = sha256(apiKey);
      const caller = cachedByHash(hash);
      if (caller) return { ok: true, caller };
      const no = refused.get(keyId);
      if (no && no.expiresAt > now() && no.keyHash === hash) return { ok: false, reason: no.reason };

      pending.set(hash, apiKey);
      let resolution: Resolution;
      try {
        resolution = await lookups.get(hash);
      } finally {
        pending.delete(hash);
      }
      if (resolution.ok) {
        known.delete(hash);
        if (known.size >= (o.maxEntries ?? 10_000)) known.delete(known.keys().next().value!);
        known.set(hash, { caller: resolution.caller, expiresAt: now() + o.ttlMs });
      } else if (resolution.reason !== 'malformed') {
        refused.delete(keyId);
        if (refused.size >= maxNegative) refused.delete(refused.keys().next().value!);
        refused.set(keyId, { keyHash: hash, reason: resolution.reason, expiresAt: now() + o.negativeTtlMs });
      }
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
  const client = new registryV1.RegistryServiceClient(
    o.address,
    ...clientChannel('mds.registry.v1.RegistryService', { deadlineMs: 2_000, token: o.token, tls: o.tls }),
  );
  return {
    async ask(apiKey) {
      try {
        const response = await unary(client, 'resolveApiKey', { apiKey });
        return {
          ok: true,
          caller: {
            companyId: response.companyId,
            keyId: response.keyId,
            scopes: effectiveScopes(response.scopes),
          },
        };
      } catch (error) {
        if (isGrpcError(error, grpc.status.NOT_FOUND)) return { ok: false, reason: 'unknown' };
        // The registry's answer for a revoked key; a PERMISSION_DENIED of another kind (this service's credential
        // may not call the RPC) is a misconfiguration, not the client's fault: it surfaces as unavailable.
        if (isGrpcError(error, grpc.status.PERMISSION_DENIED) && error.details === 'revoked API key') {
          return { ok: false, reason: 'revoked' };
        }
        throw new RegistryUnavailableError(`client-registry did not answer: ${(error as Error).message}`);
      }
    },
    close: () => client.close(),
  };
}
