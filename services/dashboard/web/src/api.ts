/** The dashboard's own API (/api), from the browser: JSON in and out, the CSRF token on every change. */

export interface FieldProblem {
  pointer: string;
  detail: string;
  code?: string;
}

/** A refused call: the problem the server answered (RFC 9457), with its stable code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: FieldProblem[] = [],
    readonly body: unknown = undefined,
  ) {
    super(detail || code);
  }
}

let csrfToken = '';
let onSignedOut: () => void = () => undefined;

export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/** What to do when the server says the session is over (go to the sign-in page). */
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`/api${path}`, {
    method,
    credentials: 'same-origin',
    headers: {
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(method === 'GET' ? {} : { 'x-csrf-token': csrfToken }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const problem = (parsed ?? {}) as { code?: string; detail?: string; errors?: FieldProblem[] };
    if (response.status === 401 && problem.code === 'not_signed_in' && path !== '/session') onSignedOut();
    throw new ApiError(
      response.status,
      problem.code ?? `http_${response.status}`,
      problem.detail ?? '',
      problem.errors ?? [],
      parsed,
    );
  }
  return parsed as T;
}

/** A query string from the set values only. */
export function queryString(values: Record<string, string | number | undefined | null>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values))
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  const text = params.toString();
  return text ? `?${text}` : '';
}
