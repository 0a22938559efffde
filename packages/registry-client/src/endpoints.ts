import type { ClientTlsFiles } from '@mds/grpc';
import { createRegistryCache } from './cache.js';
import { createRegistryClient, type Endpoint } from './client.js';

export interface EndpointDirectory {
  /** The company's endpoint, or undefined when it has none. Cached for a few seconds; a RegistryError when it cannot be asked. */
  endpoint(companyId: string): Promise<Endpoint | undefined>;
  /**
   * Tells the registry to disable an endpoint (410, or failing for too long): ep_default without an id; false if
   * it already was, or is not there.
   */
  disable(companyId: string, reason: string, endpointId?: string): Promise<boolean>;
  close(): void;
}

/**
 * Endpoints through client-registry's gRPC, cached for `ttlMs` so a rotation or an enable takes effect within
 * that; concurrent lookups of one company share a call.
 */
export function createEndpointDirectory(o: {
  address: string;
  token: string;
  /** TLS to client-registry; unset: plaintext. */
  tls?: ClientTlsFiles | undefined;
  ttlMs: number;
}): EndpointDirectory {
  const client = createRegistryClient({ address: o.address, token: o.token, tls: o.tls, deadlineMs: 3_000 });
  const cache = createRegistryCache<Endpoint | undefined>({ ttlMs: o.ttlMs, maxEntries: 10_000 });
  return {
    endpoint: (companyId) => cache.get(companyId, () => client.webhookEndpoint(companyId)),
    async disable(companyId, reason, endpointId) {
      try {
        return await client.disableWebhookEndpoint(companyId, reason, endpointId);
      } finally {
        cache.forget(companyId);
      }
    },
    close: () => client.close(),
  };
}
