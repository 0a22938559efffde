import { singleFlightCache } from '@mds/async';
import { registryV1 } from '@mds/contracts';
import { clientChannel, grpc, isGrpcError, unary, type ClientTlsFiles } from '@mds/grpc';
import { RegistryUnavailableError, type Endpoint, type EndpointDirectory } from '../application/ports.js';

export { RegistryUnavailableError, type Endpoint, type EndpointDirectory } from '../application/ports.js';

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
