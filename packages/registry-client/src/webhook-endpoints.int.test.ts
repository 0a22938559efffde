import { afterEach, describe, expect, it } from 'vitest';
import { registryV1 } from '@mds/contracts';
import { CallerAuthorizer, createGrpcServer, grpc, tokenHash } from '@mds/grpc';
import { createLogger } from '@mds/logging';
import { createRegistryClient } from './client.js';

// The dispatcher's questions about webhook endpoints, against a real gRPC server answering as client-registry
// does (its own int tests run these RPCs against the registry itself): what travels, and what comes back.

const logger = createLogger({ service: 'endpoints-test', level: 'silent' });
const TOKEN = 'dispatcher-token-for-the-test-01';
const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});

const expiresAt = new Date('2026-11-30T10:00:00.000Z');
const endpoints: registryV1.WebhookEndpoint[] = [
  {
    endpointId: 'ep_default',
    url: 'https://old.example/hook',
    description: '',
    eventTypes: [],
    enabled: true,
    disabledReason: '',
    rateLimitPerSecond: 0,
    secrets: [
      { secretId: 's2', secret: 'whsec_new', expiresAt: undefined },
      { secretId: 's1', secret: 'whsec_old', expiresAt },
    ],
  },
  {
    endpointId: 'ep_AAAAAAAAAAAAAAAAAAAAAA',
    url: 'https://analytics.example/in',
    description: 'analytics',
    eventTypes: ['message.status'],
    enabled: false,
    disabledReason: 'HTTP 410 Gone',
    rateLimitPerSecond: 20,
    secrets: [{ secretId: 's3', secret: 'whsec_a', expiresAt: undefined }],
  },
];

async function registry() {
  const disables: registryV1.DisableWebhookEndpointRequest[] = [];
  const gets: registryV1.GetWebhookEndpointRequest[] = [];
  type Call<Req> = grpc.ServerUnaryCall<Req, unknown>;
  const server = createGrpcServer({
    logger,
    authorizer: new CallerAuthorizer(
      { 'webhook-dispatcher': ['listWebhookEndpoints', 'disableWebhookEndpoint', 'getWebhookEndpoint'] },
      [{ caller: 'webhook-dispatcher', tokenSha256: tokenHash(TOKEN) }],
    ),
    services: [
      {
        name: 'mds.registry.v1.RegistryService',
        definition: registryV1.RegistryServiceService,
        implementation: {
          listWebhookEndpoints: (
            call: Call<registryV1.ListWebhookEndpointsRequest>,
            callback: grpc.sendUnaryData<registryV1.ListWebhookEndpointsResponse>,
          ) => callback(null, { endpoints: call.request.companyId === 'c-1' ? endpoints : [] }),
          getWebhookEndpoint: (
            call: Call<registryV1.GetWebhookEndpointRequest>,
            callback: grpc.sendUnaryData<registryV1.GetWebhookEndpointResponse>,
          ) => {
            gets.push(call.request);
            callback(null, { url: endpoints[0]!.url, enabled: true, secrets: endpoints[0]!.secrets });
          },
          disableWebhookEndpoint: (
            call: Call<registryV1.DisableWebhookEndpointRequest>,
            callback: grpc.sendUnaryData<registryV1.DisableWebhookEndpointResponse>,
          ) => {
            disables.push(call.request);
            if (call.request.endpointId === 'ep_gone')
              return callback({ code: grpc.status.NOT_FOUND, details: 'no webhook endpoint ep_gone' });
            callback(null, { disabled: true });
          },
        },
      },
    ],
  });
  const port = await server.start('127.0.0.1', 0);
  stops.push(() => server.stop(100));
  return { address: `127.0.0.1:${port}`, disables, gets };
}

describe("a company's webhook endpoints through the registry client", () => {
  it('lists every endpoint with its settings and secrets (expiry only where one is set)', async () => {
    const { address } = await registry();
    const client = createRegistryClient({ address, token: TOKEN, deadlineMs: 3_000 });
    stops.push(() => client.close());
    const listed = await client.webhookEndpoints('c-1');
    expect(listed).toEqual([
      {
        endpointId: 'ep_default',
        url: 'https://old.example/hook',
        description: '',
        eventTypes: [],
        enabled: true,
        disabledReason: '',
        // None of its own (0 on the wire).
        rateLimitPerSecond: undefined,
        secrets: [
          { secretId: 's2', secret: 'whsec_new' },
          { secretId: 's1', secret: 'whsec_old', expiresAt },
        ],
      },
      {
        endpointId: 'ep_AAAAAAAAAAAAAAAAAAAAAA',
        url: 'https://analytics.example/in',
        description: 'analytics',
        eventTypes: ['message.status'],
        enabled: false,
        disabledReason: 'HTTP 410 Gone',
        rateLimitPerSecond: 20,
        secrets: [{ secretId: 's3', secret: 'whsec_a' }],
      },
    ]);
    expect(listed[0]!.secrets[0]).not.toHaveProperty('expiresAt');
    await expect(client.webhookEndpoints('c-2')).resolves.toEqual([]);
  });

  it('disables the endpoint named (ep_default when none is), and answers false for one not there', async () => {
    const { address, disables, gets } = await registry();
    const client = createRegistryClient({ address, token: TOKEN, deadlineMs: 3_000 });
    stops.push(() => client.close());
    await expect(client.disableWebhookEndpoint('c-1', 'failing', 'ep_AAAAAAAAAAAAAAAAAAAAAA')).resolves.toBe(
      true,
    );
    await expect(client.disableWebhookEndpoint('c-1', 'HTTP 410 Gone')).resolves.toBe(true);
    await expect(client.disableWebhookEndpoint('c-1', 'x', 'ep_gone')).resolves.toBe(false);
    expect(disables.map((d) => [d.endpointId, d.reason])).toEqual([
      ['ep_AAAAAAAAAAAAAAAAAAAAAA', 'failing'],
      ['', 'HTTP 410 Gone'],
      ['ep_gone', 'x'],
    ]);
    // The single-URL question still works, about ep_default.
    await expect(client.webhookEndpoint('c-1')).resolves.toMatchObject({ url: 'https://old.example/hook' });
    expect(gets.map((g) => g.endpointId)).toEqual(['']);
  });
});
