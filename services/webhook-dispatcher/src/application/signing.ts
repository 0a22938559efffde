import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

const PREFIX = 'whsec_';
const keys = new Map<string, KeyObject>();

/**
 * The HMAC key of a `whsec_` secret (the base64 after the prefix), imported once: importing a raw key on
 * every signature cost more than the HMAC itself.
 */
function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    key = createSecretKey(
      Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64'),
    );
    if (keys.size >= 10_000) keys.delete(keys.keys().next().value!);
    keys.set(secret, key);
  }
  return key;
}

/**
 * Standard Webhooks `webhook-signature`: `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">` for each
 * secret, space-separated, so a receiver holding either the new or the rotated-out secret verifies it.
 */
export function signatureHeader(
  webhookId: string,
  timestampSeconds: number,
  body: string,
  secrets: readonly string[],
): string {
  const content = `${webhookId}.${timestampSeconds}.${body}`;
  return secrets
    .map((secret) => `v1,${createHmac('sha256', keyOf(secret)).update(content).digest('base64')}`)
    .join(' ');
}

/** The headers of one attempt; the timestamp is the attempt's own (it changes on each retry, the id does not). */
export function webhookHeaders(o: {
  webhookId: string;
  timestampSeconds: number;
  body: string;
  secrets: readonly string[];
}): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'mds-webhook-dispatcher/1',
    'webhook-id': o.webhookId,
    'webhook-timestamp': String(o.timestampSeconds),
    'webhook-signature': signatureHeader(o.webhookId, o.timestampSeconds, o.body, o.secrets),
  };
}
