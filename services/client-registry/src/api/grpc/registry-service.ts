// The generated handler type returns void; these return promises, which the server's guard (packages/grpc)
// catches and answers with INTERNAL, so none is left floating.
/* eslint-disable @typescript-eslint/no-misused-promises */
import {
  endpointIdOf,
  LEGACY_WEBHOOK_ENDPOINT_ID,
  messengerCode,
  type MessengerName,
  type registryV1,
} from '@mds/contracts';
import type { Knex } from '@mds/db';
import { DomainError } from '@mds/eventsourcing';
import { grpc } from '@mds/grpc';
import { messengerName, type AccountState, type WebhookEndpointRecord } from '../../domain/accounts.js';
import { findEndpoint } from '../../domain/webhook-endpoints.js';
import type { Accounts } from '../../application/accounts.js';
import { companyOfBot, findApiKey, loadAccount, unrevokedKeyIds } from '../../adapters/db/accounts-store.js';
import { apiKeyMatches, keyIdOf } from '../../application/secrets.js';
import type { PersonKeyPort } from '@mds/personal-data';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const invalid = (details: string) => ({ code: grpc.status.INVALID_ARGUMENT, details });

export const REGISTRY_SERVICE = 'mds.registry.v1.RegistryService';

/** Most key ids in one ListApiKeyIds answer (about 14 bytes each on the wire). */
const KEY_ID_PAGE = 10_000;

type Callback<T> = grpc.sendUnaryData<T>;
const notFound = (details: string) => ({ code: grpc.status.NOT_FOUND, details });

/**
 * The registry's answers to the other services' synchronous questions. Handlers are plain async functions:
 * the server's guard (packages/grpc) checks the service token and turns a failure into INTERNAL.
 */
export function registryService(o: {
  db: Knex;
  accounts: Accounts;
  personKeys: PersonKeyPort;
}): registryV1.RegistryServiceServer {
  /** An endpoint's secrets valid now, opened, the current one first. */
  const signingSecrets = (account: AccountState, endpoint: WebhookEndpointRecord) =>
    o.accounts.signingSecrets(account, endpoint).map((s) => ({
      secretId: s.secretId,
      secret: s.secret,
      ...(s.expiresAt ? { expiresAt: new Date(s.expiresAt) } : {}),
    }));
  return {
    resolveApiKey: async (call, callback: Callback<registryV1.ResolveApiKeyResponse>) => {
      const apiKey = call.request.apiKey;
      const keyId = keyIdOf(apiKey);
      const row = keyId ? await findApiKey(o.db, keyId) : undefined;
      // Unknown id and wrong secret look the same to the caller.
      if (!keyId || !row || !apiKeyMatches(apiKey, row.key_hash))
        return callback(notFound('unknown API key'));
      if (row.revoked) return callback({ code: grpc.status.PERMISSION_DENIED, details: 'revoked API key' });
      if (row.expires_at && row.expires_at.getTime() <= Date.now())
        return callback({ code: grpc.status.PERMISSION_DENIED, details: 'expired API key' });
      callback(null, {
        companyId: row.company_id,
        keyId,
        scopes: row.scopes,
        ...(row.expires_at ? { expiresAt: row.expires_at } : {}),
      });
    },

    listApiKeyIds: async (call, callback: Callback<registryV1.ListApiKeyIdsResponse>) => {
      const limit = Math.min(call.request.limit || KEY_ID_PAGE, KEY_ID_PAGE);
      const keyIds = await unrevokedKeyIds(o.db, call.request.afterKeyId, limit + 1);
      const more = keyIds.length > limit;
      const page = more ? keyIds.slice(0, limit) : keyIds;
      callback(null, { keyIds: page, nextAfterKeyId: more ? page.at(-1)! : '' });
    },

    getBotCredentials: async (call, callback: Callback<registryV1.GetBotCredentialsResponse>) => {
      const botId = call.request.botId;
      const companyId = await companyOfBot(o.db, botId);
      const account = companyId ? await loadAccount(o.db, companyId) : undefined;
      const bot = account?.bots[botId];
      if (!account || !bot) return callback(notFound(`no bot ${botId}`));
      callback(null, {
        botId,
        companyId: account.companyId,
        messenger: messengerCode(bot.messenger),
        name: bot.name,
        token: o.accounts.botToken(account, botId)!,
      });
    },

    listBots: async (call, callback: Callback<registryV1.ListBotsResponse>) => {
      const messenger = call.request.messenger ? messengerName(call.request.messenger) : undefined;
      const rows = await o
        .db('bots')
        .modify((q) => (messenger ? q.where({ messenger }) : q))
        .orderBy('bot_id')
        .select<{ bot_id: string; company_id: string; messenger: MessengerName; name: string }[]>(
          'bot_id',
          'company_id',
          'messenger',
          'name',
        );
      callback(null, {
        bots: rows.map((r) => ({
          botId: r.bot_id,
          companyId: r.company_id,
          messenger: messengerCode(r.messenger),
          name: r.name,
        })),
      });
    },

    getWebhookEndpoint: async (call, callback: Callback<registryV1.GetWebhookEndpointResponse>) => {
      const account = await loadAccount(o.db, call.request.companyId);
      const endpoints = account?.webhookEndpoints ?? [];
      // No id: ep_default (the single URL of older versions), or the only endpoint there is.
      const endpoint = call.request.endpointId
        ? findEndpoint(endpoints, call.request.endpointId)
        : (findEndpoint(endpoints, LEGACY_WEBHOOK_ENDPOINT_ID) ??
          (endpoints.length === 1 ? endpoints[0] : undefined));
      if (!account || !endpoint) return callback(notFound('no webhook endpoint'));
      callback(null, {
        url: endpoint.url,
        enabled: endpoint.enabled,
        secrets: signingSecrets(account, endpoint),
      });
    },

    listWebhookEndpoints: async (call, callback: Callback<registryV1.ListWebhookEndpointsResponse>) => {
      const account = await loadAccount(o.db, call.request.companyId);
      callback(null, {
        endpoints: (account?.webhookEndpoints ?? []).map((e) => ({
          endpointId: e.endpointId,
          url: e.url,
          description: e.description,
          eventTypes: e.eventTypes,
          enabled: e.enabled,
          disabledReason: e.disabledReason ?? '',
          rateLimitPerSecond: e.rateLimitPerSecond ?? 0,
          secrets: signingSecrets(account!, e),
        })),
      });
    },

    disableWebhookEndpoint: async (call, callback: Callback<registryV1.DisableWebhookEndpointResponse>) => {
      const { companyId, reason } = call.request;
      const endpointId = endpointIdOf(call.request.endpointId);
      const before = findEndpoint((await loadAccount(o.db, companyId))?.webhookEndpoints ?? [], endpointId);
      if (!before) return callback(notFound(`no webhook endpoint ${endpointId}`));
      try {
        await o.accounts.setWebhookEnabled(companyId, false, {
          endpointId,
          reason: reason || 'disabled by webhook-dispatcher',
          automatic: true,
        });
      } catch (error) {
        if (error instanceof DomainError) return callback(notFound(error.message));
        throw error;
      }
      callback(null, { disabled: before.enabled });
    },

    obtainPersonKey: async (call, callback: Callback<registryV1.ObtainPersonKeyResponse>) => {
      const { companyId, phoneNumber } = call.request;
      if (!UUID.test(companyId)) return callback(invalid('company_id is a UUID'));
      // Only normalised numbers are keyed: the same person must never get two subjects.
      if (!/^\d{5,15}$/.test(phoneNumber))
        return callback(invalid('phone_number is normalised E.164 digits without "+"'));
      const key = await o.personKeys.obtain(companyId, phoneNumber);
      callback(null, { key: { subjectId: key.subjectId, keyId: key.keyId, key: key.key } });
    },

    getPersonKey: async (call, callback: Callback<registryV1.GetPersonKeyResponse>) => {
      const { companyId, keyId } = call.request;
      if (!UUID.test(companyId)) return callback(invalid('company_id is a UUID'));
      const key = await o.personKeys.get(companyId, keyId);
      if (key === 'erased') return callback(null, { erased: true });
      callback(null, { key: { subjectId: key.subjectId, keyId: key.keyId, key: key.key }, erased: false });
    },
  };
}
