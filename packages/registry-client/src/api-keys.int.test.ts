import { afterEach, describe, expect, it } from 'vitest';
import { registryV1 } from '@mds/contracts';
import { CallerAuthorizer, createGrpcServer, grpc, tokenHash } from '@mds/grpc';
import { createLogger } from '@mds/logging';
import { registryKeyLookup } from './api-keys.js';
import { RegistryError } from './errors.js';

// The registry lookup behind the resolver, against a real gRPC server with per-caller credentials: a revoked key is the client's problem
// (401), but a gateway credential the registry refuses is a misconfiguration and must not look like one.

const logger = createLogger({ service: 'api-keys-test', level: 'silent' });
const TOKEN = 'gateway-token-for-the-test-0123';
const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});

async function registry(permissions: Record<string, string[]>): Promise<string> {
  const server = createGrpcServer({
    logger,
    authorizer: new CallerAuthorizer(permissions, [{ caller: 'gateway', tokenSha256: tokenHash(TOKEN) }]),
    services: [
      {
        name: 'mds.registry.v1.RegistryService',
        definition: registryV1.RegistryServiceService,
        implementation: {
          resolveApiKey: (
            call: grpc.ServerUnaryCall<registryV1.ResolveApiKeyRequest, unknown>,
            callback: grpc.sendUnaryData<registryV1.ResolveApiKeyResponse>,
          ) =>
            call.request.apiKey === 'revoked'
              ? callback({ code: grpc.status.PERMISSION_DENIED, details: 'revoked API key' })
              : callback(null, { companyId: 'c-1', keyId: 'k-1', scopes: ['send'] }),
        },
      },
    ],
  });
  const port = await server.start('127.0.0.1', 0);
  stops.push(() => server.stop(100));
  return `127.0.0.1:${port}`;
}

function resolver(address: string, token = TOKEN) {
  const r = registryKeyLookup({ address, token });
  stops.push(() => r.close());
  return r;
}

describe('the API key resolver', () => {
  it('resolves a key and tells a revoked one, with the gateway allowed ResolveApiKey', async () => {
    const r = resolver(await registry({ gateway: ['resolveApiKey'] }));
    await expect(r.ask('good')).resolves.toEqual({
      ok: true,
      caller: { companyId: 'c-1', keyId: 'k-1', scopes: ['send'] },
    });
    await expect(r.ask('revoked')).resolves.toEqual({ ok: false, reason: 'revoked' });
  });

  it('reports the registry unavailable, not the key revoked, when the registry refuses the gateway itself', async () => {
    const refused = resolver(await registry({ gateway: [] }));
    await expect(refused.ask('good')).rejects.toBeInstanceOf(RegistryError);
    await expect(refused.ask('good')).rejects.toMatchObject({ kind: 'refused', retriable: false });
    await expect(refused.ask('revoked')).rejects.toThrow(/may not call .*ResolveApiKey/);
    const unknown = resolver(
      await registry({ gateway: ['resolveApiKey'] }),
      'a-token-the-registry-does-not-know',
    );
    await expect(unknown.ask('good')).rejects.toThrow(/missing or unknown service token/);
  });
});
