import type { AttemptResult } from './attempt-result.js';

/** Connection errors that mean the request never reached the messenger: nothing can have been delivered. */
const NEVER_SENT = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** The error and what it wraps: `cause` (fetch, undici), `error` (grammY's HttpError). */
function chain(error: unknown): { code?: unknown; message?: unknown; name?: unknown }[] {
  const out: { code?: unknown; message?: unknown; name?: unknown }[] = [];
  let e = error as { cause?: unknown; error?: unknown } | undefined;
  while (e && typeof e === 'object' && out.length < 6) {
    out.push(e as { code?: unknown });
    e = (e.cause ?? e.error) as typeof e;
  }
  return out;
}

/**
 * What a call that got no answer from the messenger comes to (a network error, a timeout, an aborted
 * request): `transient` when the request surely never reached it (a refused connection, an unknown host),
 * `unconfirmed` otherwise (a timeout or a reset after the request was written: it may have been delivered).
 */
export function noAnswer(error: unknown): Extract<AttemptResult, { kind: 'transient' | 'unconfirmed' }> {
  const errors = chain(error);
  const description = errors
    .map((e) => [e.code, e.message].filter((x) => typeof x === 'string' && x).join(': '))
    .filter(Boolean)
    .join(' <- ');
  const neverSent = errors.some((e) => typeof e.code === 'string' && NEVER_SENT.has(e.code));
  return { kind: neverSent ? 'transient' : 'unconfirmed', description: description || String(error) };
}
