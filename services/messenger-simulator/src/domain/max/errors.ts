/** A MAX API failure: an HTTP status and a `{code, message}` body. */
export interface MaxError {
  status: number;
  body: { code: string; message: string };
}

export type MaxResult<T> = { status: 200; body: T } | MaxError;

function maxError(status: number, code: string, message: string): MaxError {
  return { status, body: { code, message } };
}

export function ok<T>(body: T): MaxResult<T> {
  return { status: 200, body };
}

export function isMaxError<T>(result: MaxResult<T> | MaxError): result is MaxError {
  return result.status !== 200;
}

/**
 * The bodies MAX answers with. `verify.token`, `chat.denied`, `chat.not.found` and the `proto.payload`
 * messages for text size, timeout and link format are from the reference; the others keep MAX's shape
 * and wording style but their exact text is the simulator's (MAX does not document them).
 */
export const mx = {
  badToken: () => maxError(401, 'verify.token', 'Invalid access_token'),
  denied: () => maxError(403, 'chat.denied', 'error.dialog.suspended'),
  chatNotFound: (id: number | string) => maxError(404, 'chat.not.found', `Chat ${id} not found`),
  payload: (message: string) => maxError(400, 'proto.payload', message),
  tooManyRequests: () => maxError(429, 'too.many.requests', 'Too many requests'),
  notFound: (path: string) => maxError(404, 'not.found', `Path ${path} not found`),
  methodNotAllowed: (method: string) =>
    maxError(405, 'method.not.allowed', `Method ${method} is not allowed`),
  internal: (status = 503) =>
    status === 503
      ? maxError(503, 'service.unavailable', 'Service unavailable')
      : maxError(status, 'internal.error', 'Internal server error'),
};
