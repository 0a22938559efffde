import { registryGrpcTls } from '@mds/config';
import { registryPersonKeys } from '@mds/registry-client';
import { createPersonKeyCache, type PersonKeyCache } from './keys.js';

/** Person keys from client-registry's gRPC API (ObtainPersonKey, GetPersonKey): put a cache in front. */
export { registryPersonKeys };

/** What a service that registers its stops looks like (service-kit's Lifecycle). */
export interface StopRegistry {
  onStop(name: string, stop: () => unknown): void;
}

/**
 * The service's person keys: client-registry's gRPC behind the bounded cache, its client closed on stop.
 */
export function cachedRegistryPersonKeys(
  config: {
    REGISTRY_GRPC_ADDRESS: string;
    INTERNAL_GRPC_TOKEN: string;
    PERSON_KEY_CACHE_TTL_MS: number;
    PERSON_KEY_CACHE_MAX_ENTRIES: number;
  } & Partial<Parameters<typeof registryGrpcTls>[0]>,
  lifecycle: StopRegistry,
): PersonKeyCache {
  const port = registryPersonKeys({
    address: config.REGISTRY_GRPC_ADDRESS,
    token: config.INTERNAL_GRPC_TOKEN,
    tls: registryGrpcTls({ ...config, REGISTRY_GRPC_TLS: config.REGISTRY_GRPC_TLS ?? false }),
  });
  lifecycle.onStop('person keys client', () => port.close());
  return createPersonKeyCache(port, {
    ttlMs: config.PERSON_KEY_CACHE_TTL_MS,
    maxEntries: config.PERSON_KEY_CACHE_MAX_ENTRIES,
  });
}
