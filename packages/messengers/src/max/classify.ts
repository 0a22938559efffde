import type { AttemptResult } from '../attempt-result.js';

/** A MAX API failure: the HTTP status and the body's `{code, message}`. */
export interface MaxFailure {
  status: number;
  code: string;
  message: string;
}

/** What a failed POST /messages means (reference/max-bot-api.md §3). */
export function classifySendFailure(f: MaxFailure): AttemptResult {
  const description = `${f.code}: ${f.message}`;
  if (f.status === 429 || f.code === 'too.many.requests') return { kind: 'rate-limited', description };
  if (f.status === 401 || f.code === 'verify.token') return { kind: 'unauthorized', description };
  // The person stopped or blocked the bot, or removed the dialog.
  if (f.code === 'chat.denied' || f.status === 403)
    return { kind: 'rejected', code: 'BOT_BLOCKED_BY_USER', description, unreachable: 'send-rejected' };
  if (f.code === 'chat.not.found' || f.status === 404)
    return { kind: 'rejected', code: 'CHAT_NOT_FOUND', description };
  if (f.status === 400 && f.code !== 'attachment.not.ready')
    return { kind: 'rejected', code: 'INVALID_MESSAGE', description };
  return { kind: 'transient', description: `${f.status} ${description}` };
}
