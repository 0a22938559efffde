import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { components } from './gen/api.js';

export type MessageStatusNotification = components['schemas']['MessageStatusNotification'];
export type ClientCheckNotification = components['schemas']['ClientCheckNotification'];
export type PhoneChangedNotification = components['schemas']['PhoneChangedNotification'];
/** Every notification the service POSTs to a company's webhook; `type` tells which. */
export type WebhookNotification =
  MessageStatusNotification | ClientCheckNotification | PhoneChangedNotification;

const TYPES = new Set<string>(['message.status', 'client.check', 'client.phone_changed']);

/** Why a webhook request was not taken: a bad or missing signature, a stale timestamp, a body that is no notification. */
export class MdsWebhookError extends Error {
  override name = 'MdsWebhookError';
}

type IncomingHeaders = Headers | Record<string, string | string[] | undefined>;

function plainHeaders(headers: IncomingHeaders): Record<string, string> {
  const entries = headers instanceof Headers ? [...headers.entries()] : Object.entries(headers);
  const plain: Record<string, string> = {};
  for (const [name, value] of entries) {
    if (value === undefined) continue;
    plain[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return plain;
}

/**
 * Verifies a webhook request the Standard Webhooks way (with the `standardwebhooks` library: the signature over
 * `{webhook-id}.{webhook-timestamp}.{raw body}` under any of the endpoint's `whsec_` secrets, the timestamp within
 * 5 minutes) and answers the typed notification. Pass the body's raw bytes, as they arrived, not a re-serialized
 * object, and the secrets of the endpoint that received it (each of a company's endpoints has its own: the
 * current one, and a rotated-out one while it still signs). Throws `MdsWebhookError` when the request is not
 * one the service signed for that endpoint.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: IncomingHeaders,
  secrets: string | readonly string[],
): WebhookNotification {
  const body = typeof rawBody === 'string' ? rawBody : Buffer.from(rawBody).toString('utf8');
  const plain = plainHeaders(headers);
  const keys = typeof secrets === 'string' ? [secrets] : secrets;
  if (keys.length === 0) throw new MdsWebhookError('No webhook secret to verify with');
  let last: unknown;
  for (const secret of keys) {
    try {
      const payload = new Webhook(secret).verify(body, plain) as { type?: unknown };
      if (typeof payload !== 'object' || payload === null || !TYPES.has(String(payload.type))) {
        throw new MdsWebhookError(
          `Not a notification of this service (type ${JSON.stringify(payload?.type)})`,
        );
      }
      return payload as WebhookNotification;
    } catch (error) {
      if (error instanceof MdsWebhookError) throw error;
      last = error;
    }
  }
  const reason =
    last instanceof WebhookVerificationError || last instanceof Error ? last.message : String(last);
  throw new MdsWebhookError(`Webhook not verified: ${reason}`);
}
