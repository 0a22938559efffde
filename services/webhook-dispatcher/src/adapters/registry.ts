import { LEGACY_WEBHOOK_ENDPOINT_ID } from '@mds/contracts';
import { grpc, type ClientTlsFiles } from '@mds/grpc';
import {
  createRegistryClient,
  RegistryError,
  type RegistryClient,
  type RegistryWebhookEndpoint,
} from '@mds/registry-client';
import type { Endpoint, EndpointKey } from '../application/ports.js';

/** client-registry's webhook endpoints over gRPC (@mds/registry-client), in the shape the dispatcher uses. */
export interface RegistryEndpoints {
  /** Every endpoint of the company, read now (ListWebhookEndpoints). */
  load: (companyId: string) => Promise<Endpoint[]>;
  disable: (endpoint: EndpointKey, reason: string) => Promise<boolean>;
  close: () => void;
}

const endpointOf = (e: RegistryWebhookEndpoint): Endpoint => ({
  endpointId: e.endpointId,
  url: e.url,
  eventTypes: e.eventTypes,
  enabled: e.enabled,
  rateLimitPerSecond: e.rateLimitPerSecond || undefined,
  secrets: e.secrets.map((s) => ({ secret: s.secret, ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}) })),
});

/**
 * The company's single URL as a registry older than endpoints gives it (during a rolling upgrade that starts
 * with the dispatcher): ep_default, receiving every type.
 */
async function legacyEndpoints(client: RegistryClient, companyId: string): Promise<Endpoint[]> {
  const legacy = await client.webhookEndpoint(companyId);
  if (!legacy) return [];
  return [
    {
      endpointId: LEGACY_WEBHOOK_ENDPOINT_ID,
      url: legacy.url,
      eventTypes: [],
      enabled: legacy.enabled,
      rateLimitPerSecond: undefined,
      secrets: legacy.secrets,
    },
  ];
}

const unimplemented = (error: unknown) =>
  error instanceof RegistryError && error.grpcCode === grpc.status.UNIMPLEMENTED;

export function registryEndpoints(o: {
  address: string;
  token: string;
  tls?: ClientTlsFiles | undefined;
}): RegistryEndpoints {
  const client: RegistryClient = createRegistryClient({ ...o, deadlineMs: 3_000 });
  return {
    load: async (companyId) => {
      try {
        return (await client.webhookEndpoints(companyId)).map(endpointOf);
      } catch (error) {
        if (!unimplemented(error)) throw error;
        return legacyEndpoints(client, companyId);
      }
    },
    disable: (e, reason) => client.disableWebhookEndpoint(e.companyId, reason, e.endpointId),
    close: () => client.close(),
  };
}
