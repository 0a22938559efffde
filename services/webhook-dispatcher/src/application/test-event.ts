import { randomBytes, randomUUID } from 'node:crypto';
import type { EndpointDirectory, WebhookSender } from './ports.js';
import { webhookHeaders } from './signing.js';

/** What a test delivery sent and what came back: for a person checking their endpoint from the dashboard. */
export interface TestDelivery {
  webhook_id: string;
  request: { url: string; headers: Record<string, string>; body: string };
  response: {
    /** succeeded: a 2xx; failed: any other answer; no_response: timeout, refused connection, blocked address. */
    outcome: 'succeeded' | 'failed' | 'no_response';
    status_code: number | null;
    latency_ms: number;
    excerpt: string;
    error: string | null;
  };
}

/**
 * Sends one signed `webhook.test` notification to a company's endpoint now, once, outside the delivery
 * queue (no retry, no attempt log, no event): whether the endpoint is on or off, so it can be checked before
 * it is turned on. Undefined when the company has no endpoint.
 */
export async function sendTestEvent(
  o: { directory: EndpointDirectory; sender: WebhookSender },
  companyId: string,
): Promise<TestDelivery | undefined> {
  const endpoint = await o.directory.endpoint(companyId);
  if (!endpoint) return undefined;
  // Wall-clock time, as every attempt's: receivers check webhook-timestamp against their own clocks.
  const at = new Date();
  const webhookId = `msg_${randomBytes(16).toString('hex')}`;
  const body = JSON.stringify({
    type: 'webhook.test',
    event_id: randomUUID(),
    timestamp: at.toISOString(),
    message: 'A test notification: your endpoint received and can verify it.',
  });
  const headers = webhookHeaders({
    webhookId,
    timestampSeconds: Math.floor(at.getTime() / 1000),
    body,
    secrets: endpoint.secrets.map((s) => s.secret),
  });
  const sent = await o.sender.send(endpoint.url, headers, body, at);
  const result = sent.result;
  return {
    webhook_id: webhookId,
    request: { url: endpoint.url, headers, body },
    response: {
      outcome:
        result.kind === 'response'
          ? result.status >= 200 && result.status < 300
            ? 'succeeded'
            : 'failed'
          : 'no_response',
      status_code: result.kind === 'response' ? result.status : null,
      latency_ms: sent.latencyMs,
      excerpt: sent.responseExcerpt,
      error: result.kind === 'response' ? null : result.kind === 'timeout' ? 'timed out' : result.error,
    },
  };
}
