import { Agent, request, type Dispatcher } from 'undici';
import { cleanText } from '@mds/contracts';
import { parseRetryAfter } from '../domain/schedule.js';
import type { WebhookSender } from '../application/ports.js';

export type { SentAttempt, WebhookSender } from '../application/ports.js';

import { BlockedAddressError, guardedLookup, literalRefusal, type AddressPolicy } from './ssrf.js';

/** An error's words: they may quote the endpoint (a TLS certificate's names, a parser's complaint). */
const ERROR_CHARS = 500;

/**
 * The first `limit` bytes of an answer as text we can store and send: cut before a UTF-8 sequence the limit would
 * split, then cleaned (@mds/contracts: U+FFFD for NUL, controls, lone surrogates, non-characters and bytes that
 * are no UTF-8).
 */
function excerptOf(body: Buffer, limit: number) {
  let end = Math.min(body.length, limit);
  // Back off over continuation bytes (10xxxxxx) to the lead byte of the sequence the cut would split.
  if (end < body.length)
    for (let back = 0; back < 3 && end > 0 && (body[end]! & 0xc0) === 0x80; back++) end--;
  return cleanText(body.subarray(0, end), limit);
}

function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let e = error; e && chain.length < 5; e = (e as { cause?: unknown }).cause) chain.push(e);
  return chain;
}

type Sent = Awaited<ReturnType<WebhookSender['send']>>;

const NOTHING = cleanText('', 0);

/**
 * Whether a URL may be tried at all depends on the URL and the fixed policy only: worked out once per URL
 * (names are still checked on every connect, by the lookup).
 */
function refusalsOf(policy: AddressPolicy): (url: string) => string | undefined {
  const refusals = new Map<string, string | undefined>();
  return (url) => {
    if (refusals.has(url)) return refusals.get(url);
    let refusal: string | undefined;
    try {
      const parsed = new URL(url);
      const hostname = parsed.hostname;
      const literal = literalRefusal(policy, hostname);
      const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
      if (literal) refusal = `refused ${hostname}: ${literal}`;
      else refusal = policy.portRefusal(port);
    } catch {
      refusal = 'the endpoint URL is not valid';
    }
    if (refusals.size >= 10_000) refusals.delete(refusals.keys().next().value!);
    refusals.set(url, refusal);
    return refusal;
  };
}

/** An answer: its status, Retry-After, the receiver's control header, and the start of its body. */
async function answerOf(
  response: Dispatcher.ResponseData,
  excerptBytes: number,
  now: Date,
  latencyMs: () => number,
): Promise<Sent> {
  let excerpt = Buffer.alloc(0);
  for await (const chunk of response.body) {
    if (excerpt.length < excerptBytes) excerpt = Buffer.concat([excerpt, chunk as Buffer]);
    if (excerpt.length >= excerptBytes * 4) break;
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
    latencyMs: latencyMs(),
    responseExcerpt: excerptOf(excerpt, excerptBytes),
  };
}

/** No answer: refused at connect time (SSRF), timed out, or the connection failed. */
function failureOf(error: unknown, signal: AbortSignal, latencyMs: number): Sent {
  const chain = causeChain(error);
  const blocked = chain.find((e) => e instanceof BlockedAddressError);
  if (blocked)
    return {
      result: { kind: 'blocked', error: cleanText(blocked.message, ERROR_CHARS) },
      latencyMs,
      responseExcerpt: NOTHING,
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
  if (timedOut) return { result: { kind: 'timeout' }, latencyMs, responseExcerpt: NOTHING };
  const last = chain[chain.length - 1] as { code?: string; message?: string };
  const words = [last.code, last.message].filter((x) => typeof x === 'string' && x).join(': ');
  return {
    result: { kind: 'network', error: cleanText(words || 'network error', ERROR_CHARS) },
    latencyMs,
    responseExcerpt: NOTHING,
  };
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
  const refusalOf = refusalsOf(o.policy);
  return {
    async send(url, headers, body, now) {
      const started = performance.now();
      const elapsed = () => Math.round(performance.now() - started);
      const refusal = refusalOf(url);
      if (refusal)
        return {
          result: { kind: 'blocked', error: cleanText(refusal, ERROR_CHARS) },
          latencyMs: 0,
          responseExcerpt: NOTHING,
        };
      const signal = AbortSignal.timeout(o.timeoutMs);
      try {
        const response = await request(url, { method: 'POST', headers, body, dispatcher: agent, signal });
        return await answerOf(response, o.excerptBytes, now, elapsed);
      } catch (error) {
        return failureOf(error, signal, elapsed());
      }
    },
    close: () => agent.close(),
  };
}
