import { Agent, request } from 'undici';
import { parseRetryAfter } from '../domain/schedule.js';
import type { WebhookSender } from '../application/ports.js';

export type { SentAttempt, WebhookSender } from '../application/ports.js';

import { BlockedAddressError, guardedLookup, literalRefusal, type AddressPolicy } from './ssrf.js';

function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e && chain.length < 5; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

/**
 * POSTs with undici: never follows redirects (3xx is a failure), success is a 2xx within `timeoutMs` for the
 * whole exchange, connections are checked against the address policy at connect time.
 */
export function createWebhookSender(o: {
  policy: AddressPolicy;
  timeoutMs: number;
  excerptBytes: number;
  /** Keep-alive connections per origin. */
  connectionsPerOrigin?: number;
}): WebhookSender {
  const agent = new Agent({
    connect: { lookup: guardedLookup(o.policy) as never, timeout: Math.min(o.timeoutMs, 10_000) },
    headersTimeout: o.timeoutMs,
    bodyTimeout: o.timeoutMs,
    connections: o.connectionsPerOrigin ?? 64,
    keepAliveTimeout: 30_000,
  });

  // Whether a URL may be tried at all depends on the URL and the fixed policy only: worked out once per URL
  // (names are still checked on every connect, by the lookup).
  const refusals = new Map<string, string | undefined>();
  function refusalOf(url: string): string | undefined {
    if (refusals.has(url)) return refusals.get(url);
    let refusal: string | undefined;
    try {
      const parsed = new URL(url);
      const hostname = parsed.hostname;
      const literal = literalRefusal(o.policy, hostname);
      const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
      if (literal) refusal = `refused ${hostname}: ${literal}`;
      else refusal = o.policy.portRefusal(port);
    } catch {
      refusal = 'the endpoint URL is not valid';
    }
    if (refusals.size >= 10_000) refusals.delete(refusals.keys().next().value!);
    refusals.set(url, refusal);
    return refusal;
  }

  return {
    async send(url, headers, body, now) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const refusal = refusalOf(url);
      if (refusal) return { result: { kind: 'blocked', error: refusal }, latencyMs: 0, responseExcerpt: '' };
      const signal = AbortSignal.timeout(o.timeoutMs);
      try {
        const response = await request(url, { method: 'POST', headers, body, dispatcher: agent, signal });
        let excerpt = Buffer.alloc(0);
        for await (const chunk of response.body) {
          if (excerpt.length < o.excerptBytes) excerpt = Buffer.concat([excerpt, chunk as Buffer]);
          if (excerpt.length >= o.excerptBytes * 4) break;
        }
        const header = (name: string) => {
          const value = response.headers[name];
          return Array.isArray(value) ? value[0] : value;
        };
        const retryAfter = parseRetryAfter(header('retry-after'), now);
        const control = header('webhook-delivery');
        return {
          result: {
            kind: 'response',
            status: response.statusCode,
            ...(retryAfter !== undefined ? { retryAfterSeconds: retryAfter } : {}),
            ...(control ? { deliveryControl: control.trim().toLowerCase() } : {}),
          },
          latencyMs: elapsed(),
          responseExcerpt: excerpt.subarray(0, o.excerptBytes).toString('utf8'),
        };
      } catch (error) {
        const chain = causeChain(error);
        const blocked = chain.find((e) => e instanceof BlockedAddressError);
        if (blocked)
          return {
            result: { kind: 'blocked', error: blocked.message },
            latencyMs: elapsed(),
            responseExcerpt: '',
          };
        const timedOut =
          signal.aborted ||
          chain.some(
            (e) =>
              /Timeout/i.test(String((e as Error).name)) ||
              (e as { code?: string }).code === 'UND_ERR_HEADERS_TIMEOUT' ||
              (e as { code?: string }).code === 'UND_ERR_BODY_TIMEOUT' ||
              (e as { code?: string }).code === 'UND_ERR_CONNECT_TIMEOUT',
          );
        if (timedOut) return { result: { kind: 'timeout' }, latencyMs: elapsed(), responseExcerpt: '' };
        const last = chain[chain.length - 1] as { code?: string; message?: string };
        return {
          result: {
            kind: 'network',
            error: [last.code, last.message].filter(Boolean).join(': ') || 'network error',
          },
          latencyMs: elapsed(),
          responseExcerpt: '',
        };
      }
    },
    close: () => agent.close(),
  };
}
