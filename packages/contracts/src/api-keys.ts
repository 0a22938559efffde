/**
 * The shape of a company's API key, shared by client-registry (which mints and checks keys) and the gateway
 * (which refuses a malformed key before asking anyone): `mds_<key id: 12 of [a-z0-9]>_<43 base64url chars
 * of 256 random bits>`.
 */
export const API_KEY_PATTERN = /^mds_([a-z0-9]{12})_([A-Za-z0-9_-]{43})$/;

/** The key id of a well-formed API key; undefined when the key is malformed. */
export function apiKeyIdOf(apiKey: string): string | undefined {
  return API_KEY_PATTERN.exec(apiKey)?.[1];
}

/**
 * What an API key may do: `send` (POST /send), `check` (POST /client/check), `change_phone`
 * (POST /change_phone, which re-points a person's verified links) and `read` (GET /events/{id}).
 */
export const API_KEY_SCOPES = ['send', 'check', 'change_phone', 'read'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];

/**
 * The scopes of a key issued before keys had scopes (its ApiKeyIssued event names none): everything but
 * `change_phone`, so a leaked send key cannot re-point links. A company that calls change_phone issues a key
 * with that scope.
 */
export const LEGACY_API_KEY_SCOPES: readonly ApiKeyScope[] = ['send', 'check', 'read'];

/**
 * What a key may do in this build: the scopes it was issued with that this build knows, or the legacy default
 * when it was issued with none (before keys had scopes). A scope this build does not know (issued by a newer
 * registry, or read after a rollback) grants nothing; a key with only such scopes may do nothing here.
 */
export function effectiveScopes(scopes: readonly string[]): ApiKeyScope[] {
  if (scopes.length === 0) return [...LEGACY_API_KEY_SCOPES];
  return scopes.filter((s): s is ApiKeyScope => (API_KEY_SCOPES as readonly string[]).includes(s));
}
