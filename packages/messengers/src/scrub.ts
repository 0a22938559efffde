import { cleanText } from '@mds/contracts';

/** What a secret is replaced with wherever it appears. */
export const REDACTED = '[redacted]';

// A Telegram token in a Bot API URL (`/bot<id>:<secret>/`), whoever's it is: the last line of defence when
// the token in hand is not the one in the text.
const TELEGRAM_TOKEN_IN_PATH = /\/bot\d+(?::|%3A)[A-Za-z0-9_-]+/gi;

/** Every way a secret can be written into a message: as is, URL-encoded (a URL path or query), JSON-escaped. */
function spellings(secret: string): string[] {
  return [
    ...new Set([secret, encodeURIComponent(secret), encodeURI(secret), JSON.stringify(secret).slice(1, -1)]),
  ];
}

/** `text` with every occurrence of the secrets (in any of their spellings) replaced by [redacted]. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    // A short value would redact ordinary words: real tokens and secrets are long.
    if (secret.length < 8) continue;
    for (const spelled of spellings(secret)) out = out.split(spelled).join(REDACTED);
  }
  return out.replace(TELEGRAM_TOKEN_IN_PATH, `/bot${REDACTED}`);
}

/**
 * A provider's error with nothing secret left: the same name, code and status at each level of its
 * `cause` chain, messages with the secrets redacted, and nothing else the original carried (request URLs,
 * headers, payloads with the message text or a webhook secret, response objects).
 */
export class ScrubbedError extends Error {
  readonly code: string | undefined;
  readonly status: number | undefined;

  constructor(name: string, message: string, o: { code?: string; status?: number; cause?: ScrubbedError }) {
    super(message, o.cause ? { cause: o.cause } : undefined);
    this.name = name;
    this.code = o.code;
    this.status = o.status;
    // The stack names the original's frames but its first line is the (redacted) message: rebuild it.
    this.stack = `${name}: ${message}`;
  }
}

/** The next error down: `cause` (fetch, undici, node-fetch), `error` (grammY's HttpError). */
function inner(error: object): unknown {
  const e = error as { cause?: unknown; error?: unknown };
  return e.cause ?? e.error;
}

/** The longest message of a scrubbed error: a messenger's answer may quote a megabyte of anything. */
const MESSAGE_CHARS = 2_000;

/** Text of an error from outside: secrets redacted, then cleaned (@mds/contracts) and bounded. */
const scrubbed = (text: string, secrets: readonly string[]) =>
  cleanText(redactSecrets(text, secrets), MESSAGE_CHARS);

/**
 * `error` and what it wraps (at most 6 levels), scrubbed of `secrets` (bot tokens, webhook secrets), its texts
 * cleaned of NUL and other controls and bounded (a messenger's answer quoted in it may hold anything).
 */
export function scrubError(error: unknown, secrets: readonly string[], depth = 0): ScrubbedError {
  if (!(error instanceof Object)) return new ScrubbedError('Error', scrubbed(String(error), secrets), {});
  const e = error as { name?: unknown; message?: unknown; code?: unknown; status?: unknown };
  const next = depth < 5 ? inner(error) : undefined;
  const cause = next === undefined || next === null ? undefined : scrubError(next, secrets, depth + 1);
  const name = typeof e.name === 'string' && e.name ? e.name : 'Error';
  const message = typeof e.message === 'string' ? e.message : Object.prototype.toString.call(error);
  return new ScrubbedError(scrubbed(name, secrets), scrubbed(message, secrets), {
    ...(typeof e.code === 'string' ? { code: scrubbed(e.code, secrets) } : {}),
    ...(typeof e.status === 'number' ? { status: e.status } : {}),
    ...(cause ? { cause } : {}),
  });
}
