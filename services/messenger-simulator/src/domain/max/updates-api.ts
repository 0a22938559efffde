// GET /updates and the /subscriptions endpoints.
import type { MaxBot } from '../types.js';
import { mx, ok, type MaxError, type MaxResult } from './errors.js';
import { MAX_UPDATE_TYPES, type MaxUpdate } from './objects.js';
import type { Query } from './send-message.js';

export interface MaxPollRequest {
  marker: number | undefined;
  limit: number;
  timeoutS: number;
  types: ReadonlySet<string> | undefined;
}

function intField(query: Query, name: string, fallback: number, min: number, max: number): number | MaxError {
  const raw = query[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^-?\d+$/.test(raw)) return mx.payload(`Field '${name}' value (${raw}) must be a number`);
  const value = Number(raw);
  if (value < min) return mx.payload(`Field '${name}' value (${value}) must be at least ${min}`);
  if (value > max) return mx.payload(`Field '${name}' value (${value}) must be at most ${max}`);
  return value;
}

export function readPollRequest(query: Query): MaxPollRequest | MaxError {
  const limit = intField(query, 'limit', 100, 1, 1000);
  if (typeof limit !== 'number') return limit;
  const timeoutS = intField(query, 'timeout', 30, 0, 90);
  if (typeof timeoutS !== 'number') return timeoutS;
  const rawMarker = query.marker;
  let marker: number | undefined;
  if (rawMarker !== undefined && rawMarker !== '' && rawMarker !== 'null') {
    if (!/^-?\d+$/.test(rawMarker)) return mx.payload(`Field 'marker' value (${rawMarker}) must be a number`);
    marker = Number(rawMarker);
  }
  const types = query.types
    ? new Set(
        query.types
          .split(',')
          .map((t) => t.trim())
          .filter((t) => MAX_UPDATE_TYPES.has(t)),
      )
    : undefined;
  return { marker, limit, timeoutS, types: types?.size ? types : undefined };
}

/**
 * Each update has a sequence number; the answer's `marker` is the next one expected. Passing a marker
 * marks everything before it read. Without one the bot gets what it has not been given yet (MAX's docs
 * say "only the latest"; TamTam, whose API MAX continues, says "updates you didn't get yet").
 */
export function takeUpdates(
  bot: MaxBot,
  request: MaxPollRequest,
  now: number,
): { updates: MaxUpdate[]; marker: number } {
  bot.updates.prune(now);
  if (request.marker !== undefined) bot.updates.confirmBefore(request.marker);
  const from = request.marker ?? bot.unreadFrom;
  const { items, next } = bot.updates.scan(from, request.limit, request.types);
  bot.unreadFrom = Math.max(bot.unreadFrom, next);
  return { updates: items.map((u) => u.payload), marker: next };
}

const SECRET = /^[a-zA-Z0-9_-]{5,256}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `POST /subscriptions`: a webhook URL, optional update types and secret (echoed in X-Max-Bot-Api-Secret). */
export function subscribe(
  bot: MaxBot,
  body: unknown,
  now: number,
  requireHttps: boolean,
): MaxResult<{ success: true }> {
  if (!isObject(body) || typeof body.url !== 'string' || body.url === '')
    return mx.payload("Field 'url' is required");
  const url = URL.parse(body.url);
  const allowed = requireHttps ? ['https:'] : ['https:', 'http:'];
  if (!url || !allowed.includes(url.protocol)) {
    return mx.payload(requireHttps ? 'Webhook URL must use HTTPS' : "Field 'url' must be an http(s) URL");
  }
  const secret = body.secret ?? undefined;
  if (secret !== undefined && (typeof secret !== 'string' || !SECRET.test(secret))) {
    return mx.payload(`Field 'secret' must match ${SECRET.source}`);
  }
  const rawTypes = body.update_types ?? [];
  if (!Array.isArray(rawTypes) || !rawTypes.every((t) => typeof t === 'string' && MAX_UPDATE_TYPES.has(t))) {
    return mx.payload("Field 'update_types' must be a list of update types");
  }
  const subscription = { url: body.url, secret, updateTypes: rawTypes as string[], time: now };
  bot.subscriptions = [...bot.subscriptions.filter((s) => s.url !== body.url), subscription];
  return ok({ success: true });
}

export function unsubscribe(bot: MaxBot, url: string | undefined): MaxResult<{ success: true }> {
  if (!url) return mx.payload("Field 'url' is required");
  bot.subscriptions = bot.subscriptions.filter((s) => s.url !== url);
  return ok({ success: true });
}

export function listSubscriptions(bot: MaxBot) {
  return {
    subscriptions: bot.subscriptions.map((s) => ({ url: s.url, time: s.time, update_types: s.updateTypes })),
  };
}
