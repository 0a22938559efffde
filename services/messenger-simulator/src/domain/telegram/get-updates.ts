import type { TelegramBot } from '../types.js';
import { tg, type TelegramError } from './errors.js';
import { TELEGRAM_UPDATE_TYPES, type TelegramUpdate } from './objects.js';
import { intParam, jsonParam, type Params } from './params.js';

export interface PollRequest {
  offset: number | undefined;
  /** 1-100 (out-of-range values are clamped, as the Bot API does). */
  limit: number;
  /** Seconds to hold the call when nothing is pending; 0 is a short poll. */
  timeoutS: number;
  allowedUpdates: ReadonlySet<string> | undefined;
}

/** `allowed_updates`: a JSON array of update type names; unknown names are ignored. */
export function readAllowedUpdates(params: Params): ReadonlySet<string> | undefined | TelegramError {
  const raw = jsonParam(params, 'allowed_updates');
  if (raw === undefined) return undefined;
  if (raw === 'invalid' || !Array.isArray(raw.value)) return tg.allowedUpdatesJson();
  return new Set(raw.value.filter((t): t is string => typeof t === 'string' && TELEGRAM_UPDATE_TYPES.has(t)));
}

export function readPollRequest(params: Params): PollRequest | TelegramError {
  const allowedUpdates = readAllowedUpdates(params);
  if (allowedUpdates && 'ok' in allowedUpdates) return allowedUpdates;
  const offset = intParam(params, 'offset');
  return {
    offset: offset === 0 ? undefined : offset,
    limit: Math.min(100, Math.max(1, intParam(params, 'limit') ?? 100)),
    timeoutS: Math.max(0, intParam(params, 'timeout') ?? 0),
    allowedUpdates,
  };
}

/**
 * Confirms what `offset` says was handled and returns what is pending. A positive offset forgets every
 * update below it; a negative one keeps only the last -offset updates.
 */
export function takeUpdates(bot: TelegramBot, request: PollRequest, now: number): TelegramUpdate[] {
  if (request.allowedUpdates) bot.allowedUpdates = request.allowedUpdates;
  bot.updates.prune(now);
  const { offset } = request;
  if (offset !== undefined && offset < 0) bot.updates.keepLast(-offset);
  else if (offset !== undefined) bot.updates.confirmBefore(offset);
  return bot.updates
    .read(offset !== undefined && offset > 0 ? offset : 0, request.limit)
    .map((u) => u.payload);
}
