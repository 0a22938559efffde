// The admin APIs mds-admin drives: client-registry's (/admin/v1 on REGISTRY_URL) and the dashboard's operator API
// (/admin/v1 on DASHBOARD_URL). A failure says which URL and why, never just "fetch failed".

export type Target = 'registry' | 'dashboard';

const TARGETS = {
  registry: { url: 'REGISTRY_URL', token: 'REGISTRY_ADMIN_TOKEN', defaultUrl: 'http://127.0.0.1:8081' },
  dashboard: { url: 'DASHBOARD_URL', token: 'DASHBOARD_ADMIN_TOKEN', defaultUrl: 'http://127.0.0.1:8085' },
} as const;

/** The environment mds-admin reads, for the help text. */
export const ENVIRONMENT_HELP = `Environment:
  REGISTRY_URL           client-registry's HTTP address (default ${TARGETS.registry.defaultUrl})
  REGISTRY_ADMIN_TOKEN   its admin token (required)
  DASHBOARD_URL          the dashboard's address, for the members commands (default ${TARGETS.dashboard.defaultUrl})
  DASHBOARD_ADMIN_TOKEN  its operator token (required by the members commands)`;

/** Something the operator must fix before the call can be made (a variable unset, a URL malformed): exit 2. */
export class SetupError extends Error {}

/** The call was made and failed: the service refused it, or could not be reached. Exit 1. */
export class AdminApiError extends Error {
  constructor(
    message: string,
    /** The problem document the service answered with, when it did. */
    readonly problem?: unknown,
  ) {
    super(message);
  }
}

export type Call = { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'; path: string; body?: unknown };

type Problem = { title?: string; detail?: string; errors?: { pointer: string; detail: string }[] };

/** Why a fetch failed, from undici's error and its cause (ECONNREFUSED, ENOTFOUND, a TLS error...). */
function networkCause(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.message)
    return cause.code && !cause.message.includes(cause.code)
      ? `${cause.code} ${cause.message}`
      : cause.message;
  return error instanceof Error ? error.message : String(error);
}

export async function callAdminApi(env: NodeJS.ProcessEnv, target: Target, call: Call): Promise<unknown> {
  const names = TARGETS[target];
  const token = env[names.token];
  if (!token) throw new SetupError(`${names.token} is not set (the ${target}'s admin token)`);
  const base = env[names.url] || names.defaultUrl;
  let url: URL;
  try {
    url = new URL(`${base.replace(/\/+$/, '')}/admin/v1${call.path}`);
  } catch {
    throw new SetupError(`${names.url} is not a URL: ${base}`);
  }
  const what = `${call.method} ${url.href}`;
  let response: Response;
  try {
    response = await fetch(url, {
      method: call.method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(call.body === undefined ? {} : { body: JSON.stringify(call.body) }),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    throw new AdminApiError(`cannot reach the ${target} at ${url.origin} (${what}): ${networkCause(error)}`);
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    const snippet = text.slice(0, 200).replace(/\s+/g, ' ');
    throw new AdminApiError(
      `${what} answered ${response.status} ${response.statusText} with something that is not JSON: ${snippet}`,
    );
  }
  if (!response.ok) {
    const problem = (body ?? {}) as Problem;
    const fields = (problem.errors ?? []).map((e) => `\n  ${e.pointer}: ${e.detail}`).join('');
    const detail = problem.detail ? `: ${problem.detail}` : '';
    throw new AdminApiError(
      `${response.status} ${problem.title ?? response.statusText}${detail} (${what})${fields}`,
      body,
    );
  }
  return body;
}
