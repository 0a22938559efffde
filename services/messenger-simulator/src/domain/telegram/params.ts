/** Method parameters merged from the query string and the body; form and query values are strings. */
export type Params = Record<string, unknown>;

/** A string parameter; numbers count too (a JSON client may send `text: 5`). */
export function stringParam(params: Params, name: string): string | undefined {
  const value = params[name];
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  return undefined;
}

export function intParam(params: Params, name: string): number | undefined {
  const value = params[name];
  if (typeof value === 'number') return Number.isFinite(value) ? Math.trunc(value) : undefined;
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) return Number(value.trim());
  return undefined;
}

export function boolParam(params: Params, name: string): boolean {
  const value = params[name];
  return value === true || value === 'true' || value === '1' || value === 1;
}

/**
 * A JSON-serialised parameter (`reply_markup`, `allowed_updates`): an object in a JSON body, a JSON
 * string in form or query encoding. `invalid` when the string does not parse.
 */
export function jsonParam(params: Params, name: string): { value: unknown } | 'invalid' | undefined {
  const value = params[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return { value };
  if (value.trim() === '') return undefined;
  try {
    return { value: JSON.parse(value) as unknown };
  } catch {
    return 'invalid';
  }
}

export type ChatRef = { kind: 'id'; id: number } | { kind: 'username'; username: string };

/** `chat_id`: an integer, its decimal string, or `@username`. Undefined when missing or empty. */
export function chatIdParam(params: Params): ChatRef | undefined {
  const raw = stringParam(params, 'chat_id')?.trim();
  if (!raw) return undefined;
  if (/^-?\d+$/.test(raw)) return { kind: 'id', id: Number(raw) };
  return { kind: 'username', username: raw };
}
