import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Messenger, registryV1 } from '@mds/contracts';
import { createLogger } from '@mds/logging';
import {
  CallerAuthorizer,
  channelCredentials,
  checkHealth,
  clientChannelOptions,
  createGrpcServer,
  grpc,
  isGrpcError,
  tokenHash,
  unary,
  type ClientTlsFiles,
  type ServerTlsFiles,
} from './index.js';
import { createTestCa } from './testing.js';

const logger = createLogger({ service: 'grpc-security-test', level: 'silent' });
const SERVICE = 'mds.registry.v1.RegistryService';
const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});

const implementation: Partial<registryV1.RegistryServiceServer> = {
  resolveApiKey: (_call, callback) => callback(null, { companyId: 'c-1', keyId: 'k-1', scopes: [] }),
  getBotCredentials: (call, callback) =>
    callback(null, {
      botId: call.request.botId,
      companyId: 'c-1',
      name: 'bot',
      token: 't',
      messenger: Messenger.MESSENGER_TELEGRAM,
    }),
};

async function serve(o: { authorizer?: CallerAuthorizer; tls?: ServerTlsFiles }): Promise<string> {
  const server = createGrpcServer({
    logger,
    ...o,
    services: [
      {
        name: SERVICE,
        definition: registryV1.RegistryServiceService,
        implementation: implementation as grpc.UntypedServiceImplementation,
      },
    ],
  });
  const port = await server.start('127.0.0.1', 0);
  stops.push(() => server.stop(100));
  return `127.0.0.1:${port}`;
}

function client(address: string, o: { token?: string; tls?: ClientTlsFiles } = {}) {
  const c = new registryV1.RegistryServiceClient(
    address,
    channelCredentials(o.tls),
    clientChannelOptions(SERVICE, {
      deadlineMs: 1_500,
      ...(o.token ? { token: o.token } : {}),
      serverName: o.tls?.serverName,
    }),
  );
  stops.push(() => c.close());
  return c;
}

async function codeOf(call: Promise<unknown>): Promise<grpc.status | 'OK'> {
  try {
    await call;
    return 'OK';
  } catch (error) {
    if (!isGrpcError(error)) throw error;
    return error.code;
  }
}

const GATEWAY = 'gateway-token-0123456789';
const SENDER = 'sender-token-0123456789';
const permissions = { gateway: ['resolveApiKey'], 'telegram-sender': ['getBotCredentials', 'listBots'] };

describe('caller credentials, per RPC', () => {
  it('lets each caller call its RPCs only: others PERMISSION_DENIED, unknown tokens UNAUTHENTICATED', async () => {
    const authorizer = new CallerAuthorizer(permissions, [
      { caller: 'gateway', tokenSha256: tokenHash(GATEWAY) },
      { caller: 'telegram-sender', tokenSha256: tokenHash(SENDER) },
    ]);
    const address = await serve({ authorizer });
    const gateway = client(address, { token: GATEWAY });
    const sender = client(address, { token: SENDER });
    expect(await codeOf(unary(gateway, 'resolveApiKey', { apiKey: 'k' }))).toBe('OK');
    const refused = await unary(gateway, 'getBotCredentials', { botId: 'b' }).catch((e: unknown) => e);
    expect(isGrpcError(refused, grpc.status.PERMISSION_DENIED)).toBe(true);
    expect((refused as grpc.ServiceError).details).toBe(
      'caller "gateway" may not call mds.registry.v1.RegistryService/GetBotCredentials',
    );
    expect(await codeOf(unary(sender, 'getBotCredentials', { botId: 'b' }))).toBe('OK');
    expect(await codeOf(unary(sender, 'resolveApiKey', { apiKey: 'k' }))).toBe(grpc.status.PERMISSION_DENIED);
    for (const stranger of [client(address, { token: 'not-a-known-token-000' }), client(address)]) {
      const error = await unary(stranger, 'resolveApiKey', { apiKey: 'k' }).catch((e: unknown) => e);
      expect(isGrpcError(error, grpc.status.UNAUTHENTICATED)).toBe(true);
      expect((error as grpc.ServiceError).details).toBe('missing or unknown service token');
    }
    // Health checks stay open (probes carry no token).
    expect(await checkHealth(address, SERVICE)).toBe('SERVING');
  });

  it('rotates a token without refusing a call: old and new accepted together, then only the new', async () => {
    const NEW = 'gateway-token-new-0123456789';
    const authorizer = new CallerAuthorizer(permissions, [
      { caller: 'gateway', tokenSha256: tokenHash(GATEWAY) },
    ]);
    const address = await serve({ authorizer });
    const old = client(address, { token: GATEWAY });
    const fresh = client(address, { token: NEW });
    expect(await codeOf(unary(fresh, 'resolveApiKey', { apiKey: 'k' }))).toBe(grpc.status.UNAUTHENTICATED);
    authorizer.replace([
      { caller: 'gateway', tokenSha256: tokenHash(GATEWAY) },
      { caller: 'gateway', tokenSha256: tokenHash(NEW) },
    ]);
    expect(await codeOf(unary(old, 'resolveApiKey', { apiKey: 'k' }))).toBe('OK');
    expect(await codeOf(unary(fresh, 'resolveApiKey', { apiKey: 'k' }))).toBe('OK');
    authorizer.replace([{ caller: 'gateway', tokenSha256: tokenHash(NEW) }]);
    expect(await codeOf(unary(old, 'resolveApiKey', { apiKey: 'k' }))).toBe(grpc.status.UNAUTHENTICATED);
    expect(await codeOf(unary(fresh, 'resolveApiKey', { apiKey: 'k' }))).toBe('OK');
  });
});

describe('TLS', () => {
  const ca = createTestCa('one');
  const server = ca.issue('client-registry');

  it('serves TLS: a client trusting the CA is answered, a plaintext one and one trusting another CA are not', async () => {
    const address = await serve({ tls: { certFile: server.certFile, keyFile: server.keyFile } });
    expect(
      await codeOf(unary(client(address, { tls: { caFile: ca.caFile } }), 'resolveApiKey', { apiKey: 'k' })),
    ).toBe('OK');
    expect(await codeOf(unary(client(address), 'resolveApiKey', { apiKey: 'k' }))).toBe(
      grpc.status.UNAVAILABLE,
    );
    const other = createTestCa('other');
    expect(
      await codeOf(
        unary(client(address, { tls: { caFile: other.caFile } }), 'resolveApiKey', { apiKey: 'k' }),
      ),
    ).toBe(grpc.status.UNAVAILABLE);
  });

  it('checks the server name: a certificate for another name is refused unless that name is expected', async () => {
    const address = await serve({ tls: { certFile: server.certFile, keyFile: server.keyFile } });
    // The certificate names localhost and 127.0.0.1 only.
    const wrongName = client(address, { tls: { caFile: ca.caFile, serverName: 'client-registry.mds.svc' } });
    expect(await codeOf(unary(wrongName, 'resolveApiKey', { apiKey: 'k' }))).toBe(grpc.status.UNAVAILABLE);
    const rightName = client(address, { tls: { caFile: ca.caFile, serverName: 'localhost' } });
    expect(await codeOf(unary(rightName, 'resolveApiKey', { apiKey: 'k' }))).toBe('OK');
  });

  it('with a client CA requires client certificates it signed (mutual TLS)', async () => {
    const clients = createTestCa('clients');
    const address = await serve({
      tls: { certFile: server.certFile, keyFile: server.keyFile, clientCaFile: clients.caFile },
    });
    const gateway = clients.issue('gateway');
    expect(
      await codeOf(
        unary(client(address, { tls: { caFile: ca.caFile, ...gateway } }), 'resolveApiKey', { apiKey: 'k' }),
      ),
    ).toBe('OK');
    expect(
      await codeOf(unary(client(address, { tls: { caFile: ca.caFile } }), 'resolveApiKey', { apiKey: 'k' })),
    ).toBe(grpc.status.UNAVAILABLE);
    const stranger = createTestCa('stranger').issue('gateway');
    expect(
      await codeOf(
        unary(client(address, { tls: { caFile: ca.caFile, ...stranger } }), 'resolveApiKey', { apiKey: 'k' }),
      ),
    ).toBe(grpc.status.UNAVAILABLE);
  });

  it('serves a renewed certificate once its files change, without a restart', async () => {
    const served = { certFile: join(ca.dir, 'served.crt'), keyFile: join(ca.dir, 'served.key') };
    copyFileSync(server.certFile, served.certFile);
    copyFileSync(server.keyFile, served.keyFile);
    const address = await serve({ tls: { ...served, reloadIntervalMs: 200 } });
    expect(
      await codeOf(unary(client(address, { tls: { caFile: ca.caFile } }), 'resolveApiKey', { apiKey: 'k' })),
    ).toBe('OK');
    // Renewed by another CA: clients that trust only the new CA get through once the files are re-read.
    const next = createTestCa('next');
    const renewed = next.issue('client-registry');
    copyFileSync(renewed.certFile, served.certFile);
    copyFileSync(renewed.keyFile, served.keyFile);
    await expect
      .poll(
        () =>
          codeOf(unary(client(address, { tls: { caFile: next.caFile } }), 'resolveApiKey', { apiKey: 'k' })),
        { interval: 300 },
      )
      .toBe('OK');
    expect(
      await codeOf(unary(client(address, { tls: { caFile: ca.caFile } }), 'resolveApiKey', { apiKey: 'k' })),
    ).toBe(grpc.status.UNAVAILABLE);
  });
});
