import { randomBytes, randomUUID } from 'node:crypto';
import { LEGACY_WEBHOOK_ENDPOINT_ID } from '@mds/contracts';
import type { Endpoint, WebhookSender } from './ports.js';
import { webhookHeaders } from './signing.js';

/** What a test delivery sent and what came back: for a person checking their endpoint from the dashboard. */
export interface TestDelivery {
  webhook_id: string;
  endpoint_id: string;
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
 * Why no test event was sent: the company has no endpoint, the one named is not the company's, or it has
 * several (none of them ep_default) and none was named.
 */
export type TestRefusal = 'no_endpoints' | 'unknown_endpoint' | 'endpoint_required';

/** The endpoint a test event goes to: the one named, else ep_default, else the company's only one. */
export function testEndpointOf(
  endpoints: readonly Endpoint[],
  endpointId: string | undefined,
): Endpoint | TestRefusal {
  // An endpoint named is unknown whether or not the company has others.
  if (endpoints.length === 0 && endpointId === undefined) return 'no_endpoints';
  const wanted = endpointId ?? LEGACY_WEBHOOK_ENDPOINT_ID;
  const endpoint =
    endpoints.find((e) => e.endpointId === wanted) ??
    (endpointId === undefined && endpoints.length === 1 ? endpoints[0] : undefined);
  return endpoint ?? (endpointId === undefined ? 'endpoint_required' : 'unknown_endpoint');
}

/**
 * Sends one signed `webhook.test` notification to one of a company's endpoints now, once, outside the delivery
 * queue (no retry, no attempt log, no event): whether the endpoint is on or off, so it can be checked before
 * it is turned on. The endpoints are read afresh: a URL or secret changed a moment ago is what a person tests.
 */
export async function sendTestEvent(
  o: { load: (companyId: string) => Promise<Endpoint[]>; sender: WebhookSender },
  companyId: string,
  endpointId: string | undefined,
): Promise<TestDelivery | TestRefusal> {
  const endpoint = testEndpointOf(await o.load(companyId), endpointId);
  if (typeof endpoint === 'string') return endpoint;
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
    endpoint_id: endpoint.endpointId,
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
