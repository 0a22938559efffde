import { registryV1 } from '@mds/contracts';
import { clientChannelOptions, grpc, isGrpcError, unary } from '@mds/grpc';

export interface Endpoint {
  url: string;
  enabled: boolean;
  /** Secrets to sign with now: the current one and rotated-out ones not yet expired. */
  secrets: { secret: string; expiresAt?: Date }[];
}

/** client-registry could not be asked: try again later, without counting an attempt. */
export class RegistryUnavailableError extends Error {
  override readonly name = 'RegistryUnavailableError';
}

export interface EndpointDirectory {
  /** The company's endpoint, or undefined when it has none. Cached for a few seconds. */
  endpoint(companyId: string): Promise<Endpoint | undefined>;
  /** Tells the registry to disable the endpoint (410, or failing for too long); false if it already was. */
  disable(companyId: string, reason: string): Promise<boolean>;
  close(): void;
}

interface Entry {
  value: Promise<Endpoint | undefined>;
  expiresAt: number;
}

/**
 * Endpoints through client-registry's gRPC, cached for `ttlMs` so a rotation or an enable takes effect within
 * that; concurrent lookups of one company share a call.
 */
export function createEndpointDirectory(o: {
  address: string;
  token: string;
  ttlMs: number;
}): EndpointDirectory {
  const client = new registryV1.RegistryServiceClient(
    o.address,
    grpc.credentials.createInsecure(),
    clientChannelOptions('mds.registry.v1.RegistryService', { deadlineMs: 3_000, token: o.token }),
  );
  const cache = new Map<string, Entry>();

  async function ask(companyId: string): Promise<Endpoint | undefined> {
    try {
      const response = await unary(client, 'getWebhookEndpoint', { companyId });
      return {
        url: response.url,
        enabled: response.enabled,
        secrets: response.secrets.map((s) => ({
          secret: s.secret,
          ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}),
        })),
      };
    } catch (error) {
      if (isGrpcError(error, grpc.status.NOT_FOUND)) return undefined;
      throw new RegistryUnavailableError(`client-registry did not answer: ${(error as Error).message}`);
    }
  }

  return {
    endpoint(companyId) {
      const hit = cache.get(companyId);
      if (hit && hit.expiresAt > Date.now()) return hit.value;
      const value = ask(companyId);
      const entry: Entry = { value, expiresAt: Number.POSITIVE_INFINITY };
      if (cache.size >= 10_000) cache.delete(cache.keys().next().value!);
      cache.set(companyId, entry);
      value.then(
        () => {
          entry.expiresAt = Date.now() + o.ttlMs;
        },
        () => cache.delete(companyId),
      );
      return value;
    },
    async disable(companyId, reason) {
      try {
        return (await unary(client, 'disableWebhookEndpoint', { companyId, reason })).disabled;
      } catch (error) {
        if (!isGrpcError(error, grpc.status.NOT_FOUND)) throw error;
        return false;
      } finally {
        cache.delete(companyId);
      }
    },
    close: () => client.close(),
  };
}
