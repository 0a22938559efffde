import { LEGACY_WEBHOOK_ENDPOINT_ID } from '@mds/contracts';
import { findEndpoint, type WebhookEndpointRecord, type WebhookSecretRecord } from './webhook-endpoints.js';

// The single webhook URL of versions before endpoints, as their account documents stored it: read as the endpoint
// ep_default, and written beside the endpoints while such a version may still run.

/** The account document's webhook before endpoints: ep_default's URL, state and secrets. */
export interface LegacyWebhook {
  url: string;
  enabled: boolean;
  disabledReason?: string;
  secrets: WebhookSecretRecord[];
}

/**
 * ep_default as the single `webhook` the previous release reads from the stored document (absent: none), kept
 * beside the endpoints while a release that reads only it may still run (a rolling deploy, a rollback).
 */
export function legacyWebhookOf(endpoints: readonly WebhookEndpointRecord[]): LegacyWebhook | undefined {
  const e = findEndpoint(endpoints, LEGACY_WEBHOOK_ENDPOINT_ID);
  if (!e) return undefined;
  return {
    url: e.url,
    enabled: e.enabled,
    ...(e.disabledReason !== undefined ? { disabledReason: e.disabledReason } : {}),
    secrets: e.secrets,
  };
}

/**
 * The account a stored document holds. A document of the previous release has only the single `webhook`: it is
 * the endpoint ep_default, exactly as folding its events gives it. A document of this release has both, equal;
 * where they differ, a replica of the previous release changed the `webhook` last (during a rolling deploy), and
 * it is taken for ep_default's URL, state and secrets.
 */
export function upgradeLegacyWebhook<S extends { webhookEndpoints?: WebhookEndpointRecord[] }>(
  document: S & { webhook?: LegacyWebhook | null },
): Omit<S, 'webhook'> & { webhookEndpoints: WebhookEndpointRecord[] } {
  const { webhook, ...rest } = document;
  const endpoints = rest.webhookEndpoints ?? [];
  if (!webhook) return { ...rest, webhookEndpoints: endpoints };
  const prior = findEndpoint(endpoints, LEGACY_WEBHOOK_ENDPOINT_ID);
  const legacy: WebhookEndpointRecord = {
    endpointId: LEGACY_WEBHOOK_ENDPOINT_ID,
    url: webhook.url,
    // What the previous release does not know it keeps from this one's.
    description: prior?.description ?? '',
    eventTypes: prior?.eventTypes ?? [],
    ...(prior?.rateLimitPerSecond ? { rateLimitPerSecond: prior.rateLimitPerSecond } : {}),
    enabled: webhook.enabled,
    ...(webhook.disabledReason !== undefined ? { disabledReason: webhook.disabledReason } : {}),
    ...(!webhook.enabled && prior?.disabledAutomatically ? { disabledAutomatically: true } : {}),
    secrets: webhook.secrets,
  };
  const others = endpoints.filter((e) => e.endpointId !== LEGACY_WEBHOOK_ENDPOINT_ID);
  return { ...rest, webhookEndpoints: [legacy, ...others] };
}
