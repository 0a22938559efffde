import { afterEach, describe, expect, it } from 'vitest';
import { registryV1 } from '@mds/contracts';
import { createLogger } from '@mds/logging';
import {
  checkHealth,
  clientChannelOptions,
  createGrpcServer,
  grpc,
  isGrpcError,
  unary,
  type GrpcServer,
} from './index.js';

const logger = createLogger({ service: 'grpc-test', level: 'silent' });
const SERVICE = 'mds.registry.v1.RegistryService';
const stops: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (stops.length) await stops.pop()!();
});

type Impl = Partial<registryV1.RegistryServiceServer>;

async function serve(impl: Impl): Promise<{ server: GrpcServer; address: string }> {
  const server = createGrpcServer({
    logger,
    services: [
      {
        name: SERVICE,
        definition: registryV1.RegistryServiceService,
        implementation: impl as grpc.UntypedServiceImplementation,
      },
    ],
  });
  const port = await server.start('127.0.0.1', 0);
  stops.push(() => server.stop(100));
  return { server, address: `127.0.0.1:${port}` };
}

function client(address: string, deadlineMs = 500): registryV1.RegistryServiceClient {
  const c = new registryV1.RegistryServiceClient(
    address,
    grpc.credentials.createInsecure(),
    clientChannelOptions(SERVICE, { deadlineMs }),
  );
  stops.push(() => c.close());
  return c;
}

const knownKey: Impl = {
  resolveApiKey: (call, callback) => {
    if (call.request.apiKey === 'good') callback(null, { companyId: 'c-1', keyId: 'k-1', scopes: [] });
    else callback({ code: grpc.status.NOT_FOUND, details: 'unknown API key' });
  },
};

describe('gRPC server and client', () => {
  it('answers a unary call with the generated types', async () => {
    const { address } = await serve(knownKey);
    const c = client(address);
    await expect(unary(c, 'resolveApiKey', { apiKey: 'good' })).resolves.toEqual({
      companyId: 'c-1',
      keyId: 'k-1',
      scopes: [],
    });
  });

  it('passes status codes through', async () => {
    const { address } = await serve(knownKey);
    const c = client(address);
    const error: unknown = await unary(c, 'resolveApiKey', { apiKey: 'bad' }).catch((e: unknown) => e);
    expect(isGrpcError(error, grpc.status.NOT_FOUND)).toBe(true);
  });

  it('ends a call at its deadline when the server is slow', async () => {
    const { address } = await serve({
      resolveApiKey: (_call, callback) => {
        setTimeout(() => callback(null, { companyId: 'late', keyId: '', scopes: [] }), 2_000);
      },
    });
    const c = client(address, 200);
    const started = Date.now();
    const error: unknown = await unary(c, 'resolveApiKey', { apiKey: 'x' }).catch((e: unknown) => e);
    expect(isGrpcError(error, grpc.status.DEADLINE_EXCEEDED)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it('turns a throwing handler into INTERNAL instead of crashing', async () => {
    const { address } = await serve({
      resolveApiKey: () => {
        throw new Error('boom');
      },
    });
    const c = client(address);
    const error: unknown = await unary(c, 'resolveApiKey', { apiKey: 'x' }).catch((e: unknown) => e);
    expect(isGrpcError(error, grpc.status.INTERNAL)).toBe(true);
  });

  it('reports UNAVAILABLE when nothing listens', async () => {
    const c = client('127.0.0.1:1', 300);
    const error: unknown = await unary(c, 'resolveApiKey', { apiKey: 'x' }).catch((e: unknown) => e);
    expect(isGrpcError(error)).toBe(true);
    expect([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]).toContain(
      (error as grpc.ServiceError).code,
    );
  });
});

describe('health checks', () => {
  it('say SERVING once started, NOT_SERVING when told or stopping, UNREACHABLE once gone', async () => {
    const { server, address } = await serve(knownKey);
    expect(await checkHealth(address)).toBe('SERVING');
    expect(await checkHealth(address, SERVICE)).toBe('SERVING');
    server.setStatus(SERVICE, 'NOT_SERVING');
    expect(await checkHealth(address, SERVICE)).toBe('NOT_SERVING');
    await server.stop(100);
    expect(await checkHealth(address)).toBe('UNREACHABLE');
  });

  it('let an in-flight call finish during a graceful stop', async () => {
    const { server, address } = await serve({
      resolveApiKey: (_call, callback) => {
        setTimeout(() => callback(null, { companyId: 'finished', keyId: '', scopes: [] }), 300);
      },
    });
    const c = client(address, 2_000);
    const call = unary(c, 'resolveApiKey', { apiKey: 'x' });
    await new Promise((r) => setTimeout(r, 50));
    await server.stop(2_000);
    await expect(call).resolves.toMatchObject({ companyId: 'finished' });
  });
});
