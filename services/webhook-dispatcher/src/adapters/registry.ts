import type { ClientTlsFiles } from '@mds/grpc';
import { createRegistryClient, type RegistryClient } from '@mds/registry-client';
import type { Endpoint, EndpointKey } from '../application/ports.js';

/** client-registry's webhook endpoints over gRPC (@mds/registry-client), in the shape the dispatcher uses. */
export interface RegistryEndpoints {
  /** Every endpoint of the company, read now (ListWebhookEndpoints). */
  load(companyId: string): Promise<Endpoint[]>;
  disable(endpoint: EndpointKey, reason: string): Promise<boolean>;
  close(): void;
}

export function registryEndpoints(o: {
  address: string;
  token: string;
  tls?: ClientTlsFiles | undefined;
}): RegistryEndpoints {
  const client: RegistryClient = createRegistryClient({ ...o, deadlineMs: 3_000 });
  return {
    load: async (companyId) =>
      (await client.webhookEndpoints(companyId)).map((e) => ({
        endpointId: e.endpointId,
        url: e.url,
        eventTypes: e.eventTypes,
        enabled: e.enabled,
        rateLimitPerSecond: e.rateLimitPerSecond,
        secrets: e.secrets.map((s) => ({
          secret: s.secret,
          ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}),
        })),
      })),
    disable: (e, reason) => client.disableWebhookEndpoint(e.companyId, reason, e.endpointId),
    close: () => client.close(),
  };
}
