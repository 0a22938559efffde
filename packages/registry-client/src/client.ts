import { effectiveScopes, registryV1, type ApiKeyScope, type Messenger } from '@mds/contracts';
import { clientChannel, grpc, isGrpcError, unary, type ClientTlsFiles } from '@mds/grpc';
import { RegistryError, registryErrorOf } from './errors.js';

/** The company and scopes behind an API key. */
export interface Caller {
  companyId: string;
  keyId: string;
  scopes: readonly ApiKeyScope[];
  /** When the key ends (a rolled key's overlap, epoch ms): refused from then on. Unset: until revoked. */
  expiresAt?: number;
}

export type Resolution =
  { ok: true; caller: Caller } | { ok: false; reason: 'malformed' | 'unknown' | 'revoked' | 'expired' };

export interface BotSummary {
  botId: string;
  companyId: string;
  name: string;
}

/** What a sender needs to call a messenger as a bot. */
export interface BotCredentials extends BotSummary {
  token: string;
}

export interface Endpoint {
  url: string;
  enabled: boolean;
  /** Secrets to sign with now: the current one and rotated-out ones not yet expired. */
  secrets: { secret: string; expiresAt?: Date }[];
}

/** One of a company's webhook endpoints, as ListWebhookEndpoints gives it (enabled or not, secrets opened). */
export interface RegistryWebhookEndpoint {
  endpointId: string;
  url: string;
  description: string;
  /** Empty: every notification type (see @mds/contracts' endpointReceives). */
  eventTypes: string[];
  enabled: boolean;
  /** Why it is off; empty while enabled. */
  disabledReason: string;
  /** Requests per second at most; undefined: no limit of its own. */
  rateLimitPerSecond: number | undefined;
  /** The current secret first, then rotated-out ones still signing until `expiresAt`. */
  secrets: { secretId: string; secret: string; expiresAt?: Date }[];
}

/** A person's key as client-registry hands it out (32 bytes). */
export interface RegistryPersonKey {
  subjectId: string;
  keyId: string;
  key: Buffer;
}

export interface RegistryClientOptions {
  address: string;
  /** This caller's service token (each service has its own, see the registry's callers). */
  token: string;
  /** TLS to client-registry (mTLS with a client certificate); unset: plaintext. */
  tls?: ClientTlsFiles | undefined;
  /** Deadline of each call. */
  deadlineMs: number;
}

/**
 * client-registry's gRPC API as one caller sees it: the registry's answers as values (an unknown key, bot,
 * endpoint), any failure to get one as a RegistryError.
 */
export interface RegistryClient {
  resolveApiKey(apiKey: string): Promise<Resolution>;
  /** Every unrevoked key id (asked page by page). */
  listApiKeyIds(): Promise<string[]>;
  botCredentials(botId: string): Promise<BotCredentials | undefined>;
  listBots(messenger: Messenger): Promise<BotSummary[]>;
  webhookEndpoint(companyId: string): Promise<Endpoint | undefined>;
  /** Every webhook endpoint of the company (none: an empty list), enabled or not, with its secrets. */
  webhookEndpoints(companyId: string): Promise<RegistryWebhookEndpoint[]>;
  /**
   * Disables one endpoint (none named: "ep_default"); false when the company has no such endpoint or it was
   * disabled already.
   */
  disableWebhookEndpoint(companyId: string, reason: string, endpointId?: string): Promise<boolean>;
  obtainPersonKey(companyId: string, phoneNumber: string): Promise<RegistryPersonKey>;
  getPersonKey(companyId: string, keyId: string): Promise<RegistryPersonKey | 'erased'>;
  close(): void;
}

const SERVICE = 'mds.registry.v1.RegistryService';

/** Runs a call; NOT_FOUND (and what `expected` recognises) is an answer, anything else a RegistryError. */
async function asking<T>(
  call: () => Promise<T>,
  expected: (error: grpc.ServiceError) => T | undefined,
): Promise<T> {
  try {
    return await call();
  } catch (error) {
    const answer = isGrpcError(error) ? expected(error) : undefined;
    if (answer !== undefined) return answer;
    throw registryErrorOf(error);
  }
}

const notFound =
  <T>(answer: T) =>
  (error: grpc.ServiceError) =>
    error.code === grpc.status.NOT_FOUND ? answer : undefined;

function personKeyOf(r: registryV1.PersonKey | undefined): RegistryPersonKey {
  if (!r || r.key.length !== 32)
    throw new RegistryError('client-registry answered no person key', { kind: 'bad_answer' });
  return { subjectId: r.subjectId, keyId: r.keyId, key: Buffer.from(r.key) };
}

function endpointOf(e: registryV1.WebhookEndpoint): RegistryWebhookEndpoint {
  return {
    endpointId: e.endpointId,
    url: e.url,
    description: e.description,
    eventTypes: [...e.eventTypes],
    enabled: e.enabled,
    disabledReason: e.disabledReason,
    rateLimitPerSecond: e.rateLimitPerSecond > 0 ? e.rateLimitPerSecond : undefined,
    secrets: e.secrets.map((s) => ({
      secretId: s.secretId,
      secret: s.secret,
      ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}),
    })),
  };
}

/** One gRPC client of client-registry (one channel), with this caller's credentials and deadline. */
export function createRegistryClient(o: RegistryClientOptions): RegistryClient {
  const client = new registryV1.RegistryServiceClient(
    o.address,
    ...clientChannel(SERVICE, { deadlineMs: o.deadlineMs, token: o.token, tls: o.tls }),
  );
  // "undefined" answers (no bot, no endpoint) travel as null through `asking`, which treats undefined as "no answer".
  const orUndefined = <T>(value: T | null): T | undefined => (value === null ? undefined : value);

  return {
    resolveApiKey: (apiKey) =>
      asking<Resolution>(
        async () => {
          const r = await unary(client, 'resolveApiKey', { apiKey });
          return {
            ok: true,
            caller: {
              companyId: r.companyId,
              keyId: r.keyId,
              scopes: effectiveScopes(r.scopes),
              ...(r.expiresAt ? { expiresAt: r.expiresAt.getTime() } : {}),
            },
          };
        },
        (error) => {
          if (error.code === grpc.status.NOT_FOUND) return { ok: false, reason: 'unknown' };
          // The registry's answer for a revoked key; a PERMISSION_DENIED of another kind (this service's
          // credential may not call the RPC) is a misconfiguration, not the client's fault.
          if (error.code === grpc.status.PERMISSION_DENIED && error.details === 'revoked API key')
            return { ok: false, reason: 'revoked' };
          if (error.code === grpc.status.PERMISSION_DENIED && error.details === 'expired API key')
            return { ok: false, reason: 'expired' };
          return undefined;
        },
      ),
    listApiKeyIds: async () => {
      const ids: string[] = [];
      let after = '';
      do {
        const page = await asking(
          () => unary(client, 'listApiKeyIds', { afterKeyId: after, limit: 0 }),
          () => undefined,
        );
        ids.push(...page.keyIds);
        after = page.nextAfterKeyId;
      } while (after);
      return ids;
    },
    botCredentials: async (botId) =>
      orUndefined(
        await asking<BotCredentials | null>(async () => {
          const r = await unary(client, 'getBotCredentials', { botId });
          return { botId: r.botId, companyId: r.companyId, name: r.name, token: r.token };
        }, notFound(null)),
      ),
    listBots: (messenger) =>
      asking(
        async () =>
          (await unary(client, 'listBots', { messenger })).bots.map((b) => ({
            botId: b.botId,
            companyId: b.companyId,
            name: b.name,
          })),
        () => undefined,
      ),
    webhookEndpoint: async (companyId) =>
      orUndefined(
        await asking<Endpoint | null>(async () => {
          const r = await unary(client, 'getWebhookEndpoint', { companyId, endpointId: '' });
          return {
            url: r.url,
            enabled: r.enabled,
            secrets: r.secrets.map((s) => ({
              secret: s.secret,
              ...(s.expiresAt ? { expiresAt: s.expiresAt } : {}),
            })),
          };
        }, notFound(null)),
      ),
    webhookEndpoints: (companyId) =>
      asking(
        async () => (await unary(client, 'listWebhookEndpoints', { companyId })).endpoints.map(endpointOf),
        () => undefined,
      ),
    disableWebhookEndpoint: (companyId, reason, endpointId = '') =>
      asking(
        async () =>
          (await unary(client, 'disableWebhookEndpoint', { companyId, reason, endpointId })).disabled,
        notFound(false),
      ),
    obtainPersonKey: (companyId, phoneNumber) =>
      asking(
        async () => personKeyOf((await unary(client, 'obtainPersonKey', { companyId, phoneNumber })).key),
        () => undefined,
      ),
    getPersonKey: (companyId, keyId) =>
      asking<RegistryPersonKey | 'erased'>(
        async () => {
          const r = await unary(client, 'getPersonKey', { companyId, keyId });
          return r.erased ? 'erased' : personKeyOf(r.key);
        },
        () => undefined,
      ),
    close: () => client.close(),
  };
}
