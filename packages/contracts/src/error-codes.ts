/**
 * Every error_code a webhook can carry, with its meaning. Stable: codes are never renamed or reused;
 * new ones may be added. The catalogue in docs/api.md is this list.
 */
export const messageErrorCodes = {
  UNKNOWN_BOT: 'bot_name names no bot of the company for this messenger',
  NO_DEFAULT_BOT: 'no bot_name was given and the company has no default bot for this messenger',
  CLIENT_NOT_FOUND: 'no client with this phone number in the company (nobody shared this number with a bot)',
  CLIENT_NOT_LINKED_TO_BOT: 'the client exists but has not started this bot and shared their contact with it',
  BOT_BLOCKED_BY_USER: 'the client blocked or stopped the bot',
  USER_DEACTIVATED: "the client's messenger account is deleted or deactivated",
  CHAT_NOT_FOUND: 'the messenger no longer knows the chat with the client',
  BOT_MISCONFIGURED: "the messenger refused the bot's token (revoked or wrong)",
  INVALID_MESSAGE: 'the messenger refused the content (text too long, button URL not allowed)',
  RATE_LIMITED_PAST_DEADLINE:
    "the messenger's rate limits (or a backlog of the bot's messages) kept the message waiting past its delivery deadline",
  PROVIDER_ERROR: 'the messenger kept failing (5xx, timeouts, network) until the delivery deadline',
  DELIVERY_UNCONFIRMED:
    'the sender stopped while the messenger was handling the message: it may have reached the client, and it is not sent again so the client never gets it twice',
  CLIENT_FORGOTTEN:
    "the client was forgotten (their number and the message's text erased) before the message was delivered",
  EXPIRED: 'not sent by its acceptance time plus ttl_seconds',
  CANCELED: 'canceled (POST /api/v1/cancel) before any attempt to send it',
} as const;

export type MessageErrorCode = keyof typeof messageErrorCodes;

export const phoneChangeErrorCodes = {
  SAME_PHONE: 'old_phone and new_phone are the same number',
  OLD_PHONE_NOT_FOUND: 'no client with old_phone in the company',
  NEW_PHONE_IN_USE: 'new_phone already belongs to a client of the company',
} as const;

export type PhoneChangeErrorCode = keyof typeof phoneChangeErrorCodes;

/**
 * The codes that mean "not reachable on this channel" (send's `fallback`): a message with channels left is
 * tried on the next one. Never an uncertain call's (DELIVERY_UNCONFIRMED) nor the content's or the bot's own.
 */
export const FALLBACK_ERROR_CODES: ReadonlySet<MessageErrorCode> = new Set([
  'CLIENT_NOT_FOUND',
  'CLIENT_NOT_LINKED_TO_BOT',
  'BOT_BLOCKED_BY_USER',
  'USER_DEACTIVATED',
  'CHAT_NOT_FOUND',
]);
