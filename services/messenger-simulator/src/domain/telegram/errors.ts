/** A Bot API failure: the body, whose `error_code` is also the HTTP status. */
export interface TelegramError {
  ok: false;
  error_code: number;
  description: string;
  parameters?: { retry_after?: number };
}

export type TelegramResult<T> = { ok: true; result: T; description?: string } | TelegramError;

export function tgError(errorCode: number, description: string, retryAfter?: number): TelegramError {
  return {
    ok: false,
    error_code: errorCode,
    description,
    ...(retryAfter === undefined ? {} : { parameters: { retry_after: retryAfter } }),
  };
}

export function isTelegramError(value: unknown): value is TelegramError {
  return typeof value === 'object' && value !== null && (value as { ok?: unknown }).ok === false;
}

/** The descriptions the real Bot API answers with (see the reference catalogue). */
export const tg = {
  notFound: () => tgError(404, 'Not Found'),
  unauthorized: () => tgError(401, 'Unauthorized'),
  chatIdEmpty: () => tgError(400, 'Bad Request: chat_id is empty'),
  textEmpty: () => tgError(400, 'Bad Request: message text is empty'),
  tooLong: () => tgError(400, 'Bad Request: message is too long'),
  unsupportedParseMode: () => tgError(400, 'Bad Request: unsupported parse_mode'),
  markupNotJson: () => tgError(400, "Bad Request: can't parse reply keyboard markup JSON object"),
  inlineKeyboardShape: () =>
    tgError(
      400,
      'Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup should be an Array of Arrays',
    ),
  replyKeyboardShape: () =>
    tgError(400, 'Bad Request: field "keyboard" of the ReplyKeyboardMarkup should be an Array of Arrays'),
  buttonNotObject: () =>
    tgError(400, "Bad Request: can't parse inline keyboard button: InlineKeyboardButton should be an Object"),
  buttonField: (field: string) =>
    tgError(400, `Bad Request: can't parse inline keyboard button: Field "${field}" must be of type String`),
  textButtonInInline: () =>
    tgError(
      400,
      "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard",
    ),
  buttonUrlInvalid: () => tgError(400, 'Bad Request: BUTTON_URL_INVALID'),
  buttonDataInvalid: () => tgError(400, 'Bad Request: BUTTON_DATA_INVALID'),
  markupTooLong: () => tgError(400, 'Bad Request: reply markup is too long'),
  chatNotFound: () => tgError(400, 'Bad Request: chat not found'),
  cantInitiate: () => tgError(403, "Forbidden: bot can't initiate conversation with a user"),
  blocked: () => tgError(403, 'Forbidden: bot was blocked by the user'),
  deactivated: () => tgError(403, 'Forbidden: user is deactivated'),
  tooManyRequests: (retryAfter: number) =>
    tgError(429, `Too Many Requests: retry after ${retryAfter}`, retryAfter),
  webhookActive: () =>
    tgError(
      409,
      "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
    ),
  otherGetUpdates: () =>
    tgError(
      409,
      'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
    ),
  terminatedByWebhook: () => tgError(409, 'Conflict: terminated by other long poll or webhook'),
  webhookNeedsHttps: () =>
    tgError(400, 'Bad Request: bad webhook: An HTTPS URL must be provided for webhook'),
  secretTokenChars: () => tgError(400, 'Bad Request: secret token contains unallowed characters'),
  maxConnections: () => tgError(400, 'Bad Request: max_connections must be between 1 and 100'),
  allowedUpdatesJson: () => tgError(400, "Bad Request: can't parse allowed updates JSON object"),
  internal: (status = 500) => tgError(status, status === 502 ? 'Bad Gateway' : 'Internal Server Error'),
};
