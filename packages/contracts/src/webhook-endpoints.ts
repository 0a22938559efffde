import { randomBytes } from 'node:crypto';

// The rules of a company's webhook endpoints, shared by the registry (which keeps them), the dispatcher (which
// delivers to them) and the dashboard (which shows them).

/** The notification types an endpoint may subscribe to; a new type is added here, and nowhere else. */
export const WEBHOOK_EVENT_TYPES = ['message.status', 'client.check', 'client.phone_changed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** A company has at most this many endpoints. */
export const MAX_WEBHOOK_ENDPOINTS = 10;
export const MAX_ENDPOINT_DESCRIPTION_LENGTH = 200;
/** An endpoint's own rate limit, requests per second (0 or absent: none of its own). */
export const MAX_ENDPOINT_RATE_LIMIT = 1000;

/**
 * The id of the endpoint events carry no id for: the single webhook URL of versions before endpoints. An
 * upgraded company's URL is this endpoint, with its secrets, deliveries and attempts.
 */
export const LEGACY_WEBHOOK_ENDPOINT_ID = 'ep_default';

/** "ep_" + 22 base62 characters, or the legacy id. */
export const WEBHOOK_ENDPOINT_ID_PATTERN = /^ep_(?:[0-9A-Za-z]{22}|default)$/;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function newWebhookEndpointId(): string {
  // 22 characters of 62 carry 130 bits; rejection keeps each character uniform.
  let id = '';
  while (id.length < 22) {
    for (const byte of randomBytes(32)) {
      if (byte < 248 && id.length < 22) id += BASE62[byte % 62];
    }
  }
  return `ep_${id}`;
}

/** The endpoint an event is about: events written before endpoints had ids name none. */
export function endpointIdOf(fromEvent: string | undefined): string {
  return fromEvent || LEGACY_WEBHOOK_ENDPOINT_ID;
}

/** Whether an endpoint subscribed to these types receives a notification of this type (none: every type). */
export function endpointReceives(eventTypes: readonly string[], type: string): boolean {
  return eventTypes.length === 0 || eventTypes.includes(type);
}
