import { singleFlightCache } from '@mds/async';
import { registryV1 } from '@mds/contracts';
import { clientChannel, grpc, isGrpcError, unary, type ClientTlsFiles } from '@mds/grpc';

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
  const client = new registryV1.RegistryServiceClient(
    o.address,
    ...clientChannel('mds.registry.v1.RegistryService', { deadlineMs: 3_000, token: o.token, tls: o.tls }),
  );

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

  const cache = singleFlightCache({ lookup: ask, ttlMs: o.ttlMs });

  return {
    endpoint: (companyId) => cache.get(companyId),
    async disable(companyId, reason) {
      try {
        return (await unary(client, 'disableWebhookEndpoint', { companyId, reason })).disabled;
      } catch (error) {
        if (!isGrpcError(error, grpc.status.NOT_FOUND)) throw error;
        return false;
      } finally {
        cache.forget(companyId);
      }
    },
    close: () => client.close(),
  };
}
