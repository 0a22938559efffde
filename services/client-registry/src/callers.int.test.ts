import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Messenger, registryV1 } from '@mds/contracts';
import { channelCredentials, clientChannelOptions, grpc, isGrpcError, tokenHash, unary } from '@mds/grpc';
import { createTestCa } from '@mds/grpc/testing';
import { startRegistryStack, type RegistryStack } from '../test/support.js';
import { registryCallerRpcs } from './config.js';

// client-registry with a caller per service (REGISTRY_CALLERS_FILE) behind mutual TLS: each caller may call its
// RPCs and no other, and a token is rotated through the file while the registry serves.

const SERVICE = 'mds.registry.v1.RegistryService';
const dir = mkdtempSync(join(tmpdir(), 'mds-callers-'));
const callersFile = join(dir, 'callers');
const serverCa = createTestCa('registry');
const clientCa = createTestCa('callers');
const serverCert = serverCa.issue('client-registry');
const tokens: Record<string, string> = Object.fromEntries(
  Object.keys(registryCallerRpcs()).map((caller) => [caller, `${caller}-${randomUUID()}`]),
);
const callerList = (entries: [string, string][]) =>
  entries.map(([caller, token]) => `${caller}:${tokenHash(token)}`).join('\n') + '\n';

let stack: RegistryStack;
const clients: registryV1.RegistryServiceClient[] = [];

function caller(
  token: string | undefined,
  o: { certificate?: boolean } = {},
): registryV1.RegistryServiceClient {
  const c = new registryV1.RegistryServiceClient(
    stack.grpc,
    channelCredentials({
      caFile: serverCa.caFile,
      ...(o.certificate === false ? {} : clientCa.issue('caller')),
    }),
    clientChannelOptions(SERVICE, { deadlineMs: 3_000, ...(token ? { token } : {}) }),
  );
  clients.push(c);
  return c;
}

/** One call of every RPC, with arguments that need no data (answers NOT_FOUND or an empty list). */
const calls: Record<string, (c: registryV1.RegistryServiceClient) => Promise<unknown>> = {
  resolveApiKey: (c) => unary(c, 'resolveApiKey', { apiKey: `mds_${randomUUID()}` }),
  getBotCredentials: (c) => unary(c, 'getBotCredentials', { botId: randomUUID() }),
  listBots: (c) => unary(c, 'listBots', { messenger: Messenger.MESSENGER_TELEGRAM }),
  getWebhookEndpoint: (c) => unary(c, 'getWebhookEndpoint', { companyId: randomUUID(), endpointId: '' }),
  listWebhookEndpoints: (c) => unary(c, 'listWebhookEndpoints', { companyId: randomUUID() }),
  disableWebhookEndpoint: (c) =>
    unary(c, 'disableWebhookEndpoint', { companyId: randomUUID(), reason: 'test', endpointId: '' }),
};

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'OK';
  } catch (error) {
    if (!isGrpcError(error)) throw error;
    return grpc.status[error.code];
  }
}

beforeAll(async () => {
  writeFileSync(callersFile, callerList(Object.entries(tokens)));
  stack = await startRegistryStack({
    INTERNAL_GRPC_TOKEN: undefined,
    REGISTRY_CALLERS_FILE: callersFile,
    GRPC_FILES_RELOAD_MS: '200',
    GRPC_TLS_CERT_FILE: serverCert.certFile,
    GRPC_TLS_KEY_FILE: serverCert.keyFile,
    GRPC_TLS_CLIENT_CA_FILE: clientCa.caFile,
  });
});

afterAll(async () => {
  for (const c of clients) c.close();
  await stack?.stop();
});

describe.each(Object.entries(registryCallerRpcs()))('caller %s', (name, allowed) => {
  it(`may call ${allowed.join(' and ')}, and is refused every other RPC`, async () => {
    const c = caller(tokens[name]);
    for (const [rpc, call] of Object.entries(calls)) {
      const code = await codeOf(call(c));
      if (allowed.includes(rpc))
        expect([rpc, code]).toEqual([rpc, expect.stringMatching(/^(OK|NOT_FOUND)$/)]);
      else expect([rpc, code]).toEqual([rpc, 'PERMISSION_DENIED']);
    }
  });
});

describe('the gRPC port', () => {
  it('answers an unknown or missing token UNAUTHENTICATED, and says why a caller is refused', async () => {
    expect(await codeOf(calls.resolveApiKey!(caller('not-a-caller-token-0000')))).toBe('UNAUTHENTICATED');
    expect(await codeOf(calls.resolveApiKey!(caller(undefined)))).toBe('UNAUTHENTICATED');
    const refused = await calls.getBotCredentials!(caller(tokens.gateway)).catch((e: unknown) => e);
    expect((refused as grpc.ServiceError).details).toBe(
      'caller "gateway" may not call mds.registry.v1.RegistryService/GetBotCredentials',
    );
    expect(stack.logs.join('')).not.toContain(tokens.gateway);
  });

  it('needs a client certificate (mutual TLS), whatever the token', async () => {
    expect(await codeOf(calls.resolveApiKey!(caller(tokens.gateway, { certificate: false })))).toBe(
      'UNAVAILABLE',
    );
  });

  it('rotates a caller token through the file without a restart: old and new together, then the new only', async () => {
    const old = caller(tokens.gateway);
    const rotated = `gateway-${randomUUID()}`;
    const next = caller(rotated);
    expect(await codeOf(calls.resolveApiKey!(next))).toBe('UNAUTHENTICATED');
    const others = Object.entries(tokens).filter(([n]) => n !== 'gateway');
    writeFileSync(callersFile, callerList([...others, ['gateway', tokens.gateway!], ['gateway', rotated]]));
    await expect.poll(() => codeOf(calls.resolveApiKey!(next)), { interval: 100 }).toBe('NOT_FOUND');
    expect(await codeOf(calls.resolveApiKey!(old))).toBe('NOT_FOUND');
    writeFileSync(callersFile, callerList([...others, ['gateway', rotated]]));
    await expect.poll(() => codeOf(calls.resolveApiKey!(old)), { interval: 100 }).toBe('UNAUTHENTICATED');
    expect(await codeOf(calls.resolveApiKey!(next))).toBe('NOT_FOUND');
    // A list that does not parse is not taken: the last good one stays in force.
    writeFileSync(callersFile, 'gateway:not-a-hash\n');
    await new Promise((r) => setTimeout(r, 600));
    expect(await codeOf(calls.resolveApiKey!(next))).toBe('NOT_FOUND');
    expect(stack.logs.join('')).toContain('gRPC callers file not reloaded');
  });
});

describe('configuration', () => {
  it('refuses a caller list with an unknown caller or a shared token, and a start without any caller list', async () => {
    const { configSchema } = await import('./config.js');
    const { loadConfig } = await import('@mds/config');
    const base = {
      KAFKA_BROKERS: 'localhost:9092',
      DATABASE_URL: 'postgres://u:p@localhost/db',
      REGISTRY_ADMIN_TOKEN: 'admin-token-0123456789',
      REGISTRY_ENCRYPTION_KEYS: 'k1:x',
    };
    expect(() => loadConfig(configSchema, base)).toThrow(/REGISTRY_CALLERS: set REGISTRY_CALLERS/);
    expect(() =>
      loadConfig(configSchema, { ...base, REGISTRY_CALLERS: `analytics:${tokenHash('x')}` }),
    ).toThrow(/unknown caller "analytics"/);
    expect(() =>
      loadConfig(configSchema, {
        ...base,
        REGISTRY_CALLERS: `gateway:${tokenHash('x')},webhook-dispatcher:${tokenHash('x')}`,
      }),
    ).toThrow(/share a token/);
    expect(() =>
      loadConfig(configSchema, {
        ...base,
        INTERNAL_GRPC_TOKEN: 'dev-token-0123456789',
        REGISTRY_REQUIRE_CALLERS: 'true',
      }),
    ).toThrow(/REGISTRY_CALLERS: required/);
  });
});
