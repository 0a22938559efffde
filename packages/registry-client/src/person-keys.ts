import type { ClientTlsFiles } from '@mds/grpc';
import { createRegistryClient, type RegistryPersonKey } from './client.js';

/** Person keys from client-registry's gRPC API (ObtainPersonKey, GetPersonKey), uncached: put a cache in front. */
export function registryPersonKeys(o: {
  address: string;
  token: string;
  /** TLS to client-registry; unset: plaintext. */
  tls?: ClientTlsFiles | undefined;
  deadlineMs?: number;
}): {
  obtain(companyId: string, phoneNumber: string): Promise<RegistryPersonKey>;
  get(companyId: string, keyId: string): Promise<RegistryPersonKey | 'erased'>;
  close(): void;
} {
  const client = createRegistryClient({ ...o, deadlineMs: o.deadlineMs ?? 2_000 });
  return {
    obtain: (companyId, phoneNumber) => client.obtainPersonKey(companyId, phoneNumber),
    get: (companyId, keyId) => client.getPersonKey(companyId, keyId),
    close: () => client.close(),
  };
}
