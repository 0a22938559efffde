import { randomUUID } from 'node:crypto';
import { LEGACY_WEBHOOK_ENDPOINT_ID, newWebhookEndpointId } from '@mds/contracts';
import type { AccountState, WebhookEndpointRecord, WebhookEndpointSettings } from '../domain/accounts.js';
import { findEndpoint } from '../domain/webhook-endpoints.js';
import type { AccountsDeps, OnCompany } from './accounts.js';
import { newWebhookSecret, ownerOf, seal, unseal } from './secrets.js';

/** Whom a sealed signing secret belongs to: its company and its id (unique within the company). */
export const webhookSecretOwner = (companyId: string, secretId: string) =>
  ownerOf('webhook-secret', companyId, secretId);

/** Which endpoint a disable or enable is about, and why (absent endpointId: ep_default). */
export interface EndpointSwitch {
  endpointId?: string | undefined;
  reason?: string | undefined;
  /** The dispatcher's doing (410 Gone, failing for the documented window), not a person's. */
  automatic?: boolean;
}

/** A company's webhook endpoints and their signing secrets. */
export function webhookEndpointCommands(
  deps: Pick<AccountsDeps, 'keyring' | 'webhookSecretOverlapHours' | 'now'>,
  onCompany: OnCompany,
) {
  /** A new whsec_ secret: plain for the one answer that shows it, sealed for the account. */
  const newSecret = (companyId: string) => {
    const secretId = randomUUID();
    const plain = newWebhookSecret();
    return {
      plain,
      sealed: { secretId, secret: seal(deps.keyring, plain, webhookSecretOwner(companyId, secretId)) },
    };
  };
  const endpointIn = (state: AccountState, endpointId: string) =>
    findEndpoint(state.webhookEndpoints, endpointId)!;

  return {
    /** The single-URL API: sets ep_default's URL (made, with a signing secret, the first time). */
    async configureWebhook(companyId: string, url: string) {
      const state = await onCompany(companyId, {
        type: 'ConfigureWebhook',
        url,
        newSecret: newSecret(companyId).sealed,
      });
      return endpointIn(state, LEGACY_WEBHOOK_ENDPOINT_ID);
    },

    /** Adds an endpoint with a new id and signing secret; the secret itself is in the result only. */
    async addWebhookEndpoint(companyId: string, settings: WebhookEndpointSettings, enabled = true) {
      const endpointId = newWebhookEndpointId();
      const secret = newSecret(companyId);
      const state = await onCompany(companyId, {
        type: 'AddWebhookEndpoint',
        endpointId,
        settings,
        newSecret: secret.sealed,
        enabled,
      });
      return { endpoint: endpointIn(state, endpointId), secret: secret.plain };
    },

    async changeWebhookEndpoint(
      companyId: string,
      endpointId: string,
      changes: Partial<WebhookEndpointSettings>,
    ) {
      const state = await onCompany(companyId, { type: 'ChangeWebhookEndpoint', endpointId, changes });
      return endpointIn(state, endpointId);
    },

    removeWebhookEndpoint: (companyId: string, endpointId: string) =>
      onCompany(companyId, { type: 'RemoveWebhookEndpoint', endpointId }),

    /** A new current secret; the previous one signs too for WEBHOOK_SECRET_OVERLAP_HOURS. */
    async rotateWebhookSecret(companyId: string, endpointId?: string) {
      const at = deps.now();
      const secret = newSecret(companyId);
      const state = await onCompany(companyId, {
        type: 'RotateWebhookSecret',
        ...(endpointId === undefined ? {} : { endpointId }),
        ...secret.sealed,
        previousExpiresAt: new Date(at.getTime() + deps.webhookSecretOverlapHours * 3_600_000).toISOString(),
      });
      return { endpoint: endpointIn(state, endpointId ?? LEGACY_WEBHOOK_ENDPOINT_ID), secret: secret.plain };
    },

    setWebhookEnabled: (companyId: string, enabled: boolean, which: EndpointSwitch = {}) => {
      const endpoint = which.endpointId === undefined ? {} : { endpointId: which.endpointId };
      return onCompany(
        companyId,
        enabled
          ? { type: 'EnableWebhook', ...endpoint }
          : {
              type: 'DisableWebhook',
              ...endpoint,
              reason: which.reason || 'disabled through the admin API',
              automatic: which.automatic ?? false,
            },
      );
    },

    /** The plain signing secrets of one of the company's endpoints that are valid now (current first). */
    signingSecrets(state: AccountState, endpoint: WebhookEndpointRecord, at = deps.now()) {
      return endpoint.secrets
        .filter((s) => !s.expiresAt || s.expiresAt > at.toISOString())
        .sort((a, b) => Number(Boolean(a.expiresAt)) - Number(Boolean(b.expiresAt)))
        .map((s) => ({
          secretId: s.secretId,
          secret: unseal(deps.keyring, s.secret, webhookSecretOwner(state.companyId, s.secretId)),
          expiresAt: s.expiresAt,
        }));
    },
  };
}
