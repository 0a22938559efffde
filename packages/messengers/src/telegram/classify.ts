import type { AttemptResult } from '../attempt-result.js';

/** A Bot API failure: `{ok: false, error_code, description, parameters}`. */
export interface TelegramFailure {
  error_code: number;
  description: string;
  parameters?: { retry_after?: number };
}

/**
 * What a failed sendMessage means. Telegram documents error_code as "subject to change", so the
 * description decides together with the code (reference/telegram-bot-api.md §4).
 */
export function classifySendFailure(f: TelegramFailure): AttemptResult {
  const text = f.description;
  const is = (pattern: RegExp) => pattern.test(text);
  if (f.error_code === 429) {
    const seconds = f.parameters?.retry_after;
    return {
      kind: 'rate-limited',
      description: text,
      ...(seconds !== undefined ? { retryAfterMs: seconds * 1000 } : {}),
    };
  }
  if (f.error_code === 403) {
    if (is(/user is deactivated/i))
      return { kind: 'rejected', code: 'USER_DEACTIVATED', description: text, unreachable: 'deactivated' };
    if (is(/can't initiate conversation/i))
      return {
        kind: 'rejected',
        code: 'CLIENT_NOT_LINKED_TO_BOT',
        description: text,
        unreachable: 'send-rejected',
      };
    // "bot was blocked by the user", "bot was kicked from the ... chat", and any other refusal of this chat.
    return { kind: 'rejected', code: 'BOT_BLOCKED_BY_USER', description: text, unreachable: 'send-rejected' };
  }
  if (f.error_code === 401 || f.error_code === 404) return { kind: 'unauthorized', description: text };
  if (f.error_code === 400) {
    if (is(/chat not found/i)) return { kind: 'rejected', code: 'CHAT_NOT_FOUND', description: text };
    return { kind: 'rejected', code: 'INVALID_MESSAGE', description: text };
  }
  // 5xx, 409 and anything unexpected: it may go through later.
  return { kind: 'transient', description: `${f.error_code}: ${text}` };
}
