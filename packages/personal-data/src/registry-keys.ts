import { registryV1 } from '@mds/contracts';
import { registryGrpcTls } from '@mds/config';
import { clientChannel, unary, type ClientTlsFiles } from '@mds/grpc';
import { createPersonKeyCache, type PersonKeyCache, type PersonKeyPort } from './keys.js';
import type { PersonKey } from './seal.js';

/** Person keys from client-registry's gRPC API (ObtainPersonKey, GetPersonKey): put a cache in front. */
export function registryPersonKeys(o: {
  address: string;
  token: string;
  /** TLS to client-registry; unset: plaintext. */
  tls?: ClientTlsFiles | undefined;
  deadlineMs?: number;
}): PersonKeyPort & { close(): void } {
  const client = new registryV1.RegistryServiceClient(
    o.address,
    ...clientChannel('mds.registry.v1.RegistryService', {
      deadlineMs: o.deadlineMs ?? 2_000,
      token: o.token,
      tls: o.tls,
    }),
  );
  const toKey = (r: registryV1.PersonKey | undefined): PersonKey => {
    if (!r || r.key.length !== 32) throw new Error('client-registry answered no person key');
    return { subjectId: r.subjectId, keyId: r.keyId, key: Buffer.from(r.key) };
  };
  return {
    async obtain(companyId, phoneNumber) {
      return toKey((await unary(client, 'obtainPersonKey', { companyId, phoneNumber })).key);
    },
    async get(companyId, keyId) {
      const response = await unary(client, 'getPersonKey', { companyId, keyId });
      return response.erased ? 'erased' : toKey(response.key);
    },
    close: () => client.close(),
  };
}

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
