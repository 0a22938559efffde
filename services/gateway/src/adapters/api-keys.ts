import { createHash } from 'node:crypto';
import { singleFlightCache } from '@mds/async';
import { registryV1 } from '@mds/contracts';
import { clientChannel, grpc, isGrpcError, unary, type ClientTlsFiles } from '@mds/grpc';

export interface Caller {
  companyId: string;
  keyId: string;
}

export type Resolution = { ok: true; caller: Caller } | { ok: false; reason: 'unknown' | 'revoked' };

/** The registry could not be asked: the gateway cannot tell a good key from a bad one right now. */
export class RegistryUnavailableError extends Error {
  override readonly name = 'RegistryUnavailableError';
}

export interface ApiKeyResolver {
  resolve(apiKey: string): Promise<Resolution>;
  close(): void;
}

/**
 * API key -> company through client-registry's gRPC, cached briefly: a known key for `ttlMs` (so a revoked
 * key stops working within that), an unknown one for `negativeTtlMs`. Concurrent lookups of one key share a
 * call. The cache is keyed by the key's SHA-256 and lives in memory only.
 */
export function createApiKeyResolver(o: {
  address: string;
  token: string;
  /** TLS to client-registry; unset: plaintext. */
  tls?: ClientTlsFiles | undefined;
  ttlMs: number;
  negativeTtlMs: number;
  maxEntries?: number;
  now?: () => number;
}): ApiKeyResolver {
  const client = new registryV1.RegistryServiceClient(
    o.address,
    ...clientChannel('mds.registry.v1.RegistryService', { deadlineMs: 2_000, token: o.token, tls: o.tls }),
  );
  async function ask(apiKey: string): Promise<Resolution> {
    try {
      const response = await unary(client, 'resolveApiKey', { apiKey });
      return { ok: true, caller: { companyId: response.companyId, keyId: response.keyId } };
    } catch (error) {
      if (isGrpcError(error, grpc.status.NOT_FOUND)) return { ok: false, reason: 'unknown' };
      // The registry's answer for a revoked key; a PERMISSION_DENIED of another kind (this service's credential
      // may not call the RPC) is a misconfiguration, not the client's fault: it surfaces as unavailable.
      if (isGrpcError(error, grpc.status.PERMISSION_DENIED) && error.details === 'revoked API key') {
        return { ok: false, reason: 'revoked' };
      }
      throw new RegistryUnavailableError(`client-registry did not answer: ${(error as Error).message}`);
    }
  }

  // Keyed by the key's SHA-256: the key itself is never kept. The lookup gets the key through `pending`.
  const pending = new Map<string, string>();
  const cache = singleFlightCache<Resolution>({
    lookup: (id) => ask(pending.get(id)!),
    ttlMs: (resolution) => (resolution.ok ? o.ttlMs : o.negativeTtlMs),
    capacity: o.maxEntries ?? 10_000,
    ...(o.now ? { now: o.now } : {}),
  });

  return {
    resolve(apiKey) {
      const id = createHash('sha256').update(apiKey).digest('base64url');
      pending.set(id, apiKey);
      try {
        return cache.get(id);
      } finally {
        pending.delete(id);
      }
    },
    close: () => client.close(),
  };
}
