import type { components } from './gen/api.js';

export type Problem = components['schemas']['Problem'];
export type FieldError = NonNullable<Problem['errors']>[number];

/** What the gateway answered instead of a 2xx: its status, the problem's stable `code` and the whole body. */
export class MdsApiError extends Error {
  override name = 'MdsApiError';
  constructor(
    /** The call, e.g. `POST /api/v1/send`. */
    readonly operation: string,
    readonly status: number,
    /** The problem's stable code (`validation_failed`, `rate_limited`...), or `unauthorized` for a 401. */
    readonly code: string,
    message: string,
    /** The body as the gateway sent it (RFC 9457 problem details; `{ detail }` for a 401). */
    readonly problem: Problem | { detail: string } | undefined,
    /** The request's X-Request-Id, to find it in the service's logs. */
    readonly requestId: string | undefined,
    /** What Retry-After said, in seconds, when it said anything. */
    readonly retryAfterSeconds: number | undefined,
  ) {
    super(`${operation}: ${status} ${code}: ${message}`);
  }
}

/** 401: the API key is missing, unknown or revoked. */
export class MdsUnauthorizedError extends MdsApiError {
  override name = 'MdsUnauthorizedError';
}

/** 422 `validation_failed`: `errors` names each field at fault (a JSON Pointer, a detail and a stable code). */
export class MdsValidationError extends MdsApiError {
  override name = 'MdsValidationError';
  get errors(): FieldError[] {
    return (this.problem as Problem | undefined)?.errors ?? [];
  }
}

/** 429 after the retries: the API key or the company sends faster than its limits. */
export class MdsRateLimitedError extends MdsApiError {
  override name = 'MdsRateLimitedError';
}

/** 503 after the retries: the event log or the key check is unavailable; nothing was accepted. */
export class MdsUnavailableError extends MdsApiError {
  override name = 'MdsUnavailableError';
}

/** 404: no message or request of the company has this event_id (or it is not readable yet). */
export class MdsNotFoundError extends MdsApiError {
  override name = 'MdsNotFoundError';
}

/** The gateway could not be reached (after the retries): the URL and the cause. */
export class MdsNetworkError extends Error {
  override name = 'MdsNetworkError';
  constructor(
    readonly operation: string,
    readonly baseUrl: string,
    override readonly cause: unknown,
  ) {
    super(
      `${operation}: ${baseUrl} did not answer: ${cause instanceof Error ? cause.message : String(cause)}`,
    );
  }
}

const KINDS: Record<number, typeof MdsApiError> = {
  401: MdsUnauthorizedError,
  404: MdsNotFoundError,
  429: MdsRateLimitedError,
  503: MdsUnavailableError,
};

export function errorOf(operation: string, response: Response, body: unknown): MdsApiError {
  const problem = typeof body === 'object' && body !== null ? (body as Problem) : undefined;
  const code = response.status === 401 ? 'unauthorized' : (problem?.code ?? `http_${response.status}`);
  const message = problem?.detail ?? (typeof body === 'string' && body ? body : response.statusText);
  const retryAfter = response.headers.get('retry-after');
  const Kind =
    response.status === 422 && code === 'validation_failed'
      ? MdsValidationError
      : (KINDS[response.status] ?? MdsApiError);
  return new Kind(
    operation,
    response.status,
    code,
    message,
    problem,
    response.headers.get('x-request-id') ?? undefined,
    retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) : undefined,
  );
}
