import { Problem } from '@mds/service-kit';

/** A JSON call to another service of ours; its problems come back as problems, with their codes. */
export interface JsonClient {
  call<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
  /** The same call, answering the status and body whatever the status (only an unreachable service throws). */
  raw<T>(
    method: string,
    path: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: T; headers: Headers }>;
}

export function createJsonClient(o: {
  name: string;
  baseUrl: string;
  headers?: Record<string, string>;
  /** Headers made for each call (the dashboard's signed assertion for the company it acts for). */
  authorize?: () => Promise<Record<string, string>>;
  timeoutMs?: number;
}): JsonClient {
  async function raw<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
    let response: Response;
    try {
      response = await fetch(`${o.baseUrl}${path}`, {
        method,
        headers: {
          ...o.headers,
          ...(o.authorize ? await o.authorize() : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(o.timeoutMs ?? 15_000),
      });
    } catch (error) {
      throw new Problem(
        502,
        'upstream_unavailable',
        'Service unavailable',
        `${o.name} did not answer: ${(error as Error).message}`,
      );
    }
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = { detail: text.slice(0, 500) };
    }
    return { status: response.status, body: parsed as T, headers: response.headers };
  }
  return {
    raw,
    async call<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>) {
      const answer = await raw<T>(method, path, body, headers);
      if (answer.status < 400) return answer.body;
      const problem = (answer.body ?? {}) as {
        code?: string;
        title?: string;
        detail?: string;
        errors?: { pointer: string; detail: string; code?: string }[];
      };
      if (answer.status >= 500 || answer.status === 401 || answer.status === 403) {
        throw new Problem(
          502,
          'upstream_failed',
          'Service failed',
          `${o.name} answered ${answer.status}: ${problem.detail ?? ''}`,
        );
      }
      throw new Problem(
        answer.status,
        problem.code ?? 'upstream_refused',
        problem.title ?? 'Refused',
        problem.detail ?? `${o.name} answered ${answer.status}`,
        problem.errors?.map((e) => ({
          pointer: e.pointer,
          detail: e.detail,
          ...(e.code ? { code: e.code } : {}),
        })),
      );
    },
  };
}
