import type { AttributeValue, Attributes } from '@opentelemetry/api';
// Types only: the SDK is loaded when tracing is on (sdk.ts), never by importing this module.
import type { Span, SpanProcessor } from '@opentelemetry/sdk-trace';

// What a span may carry is what a log line may: no secret (bot tokens, receivers' query tokens, API keys), no
// phone number, no text. The instrumentations record full URLs (a Telegram call is `/bot<token>/sendMessage`,
// a registry admin call `/companies/<id>/clients/<phone>/forget`, a webhook URL may hold its receiver's token
// in the query), so every span is rewritten as it ends, before any exporter sees it.

/** A path segment holding a Telegram bot token: `bot<bot id>:<secret>`. */
const BOT_TOKEN_SEGMENT = /^bot\d+:.+$/;
/** A phone number as a whole path segment, with or without its `+` (encoded or not). */
const PHONE_SEGMENT = /^(?:\+|%2B)?\d{7,15}$/i;
/** Ids that are ours and name nothing secret: UUIDs, webhook ids. Kept, they make a trace findable. */
const KNOWN_ID_SEGMENT =
  /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|msg_[0-9a-f]{32})$/i;
/** Long, mixed segments (a token a receiver put in its webhook path, a one-time link's secret). */
const TOKEN_SEGMENT = /^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9._~%+=-]{20,}$/;

/** A bot token anywhere in a text (`<bot id>:<35 characters>`), and a phone number standing alone. */
const BOT_TOKEN_IN_TEXT = /\b\d{5,}:[A-Za-z0-9_-]{20,}/g;
const PHONE_IN_TEXT = /(?<![\w.:/-])\+?\d{10,15}(?![\w.-])/g;
const URL_IN_TEXT = /\bhttps?:\/\/[^\s"'<>]+/g;

/** One path segment as a trace may show it. */
function segmentOf(segment: string): string {
  if (segment === '' || KNOWN_ID_SEGMENT.test(segment)) return segment;
  if (BOT_TOKEN_SEGMENT.test(segment)) return 'bot***';
  if (PHONE_SEGMENT.test(segment)) return '{phone}';
  if (TOKEN_SEGMENT.test(segment)) return '***';
  // Express route parameters (`:phone`, `bot:token`) read as the templates they are.
  return segment.replace(/:(\w+)/g, '{$1}');
}

/**
 * A URL path as a template: bot tokens `bot***`, phone numbers `{phone}`, other token-like segments `***`,
 * route parameters `{name}`; the query and fragment dropped.
 */
export function templatedPath(path: string): string {
  const bare = path.split(/[?#]/, 1)[0]!;
  return bare.split('/').map(segmentOf).join('/');
}

/**
 * A full URL without credentials, query or fragment, its path templated; `?[redacted]` says there was a
 * query, as in logs (@mds/logging's redactedUrl).
 */
export function templatedUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return templatedPath(value);
  }
  return `${url.protocol}//${url.host}${templatedPath(url.pathname)}${url.search ? '?[redacted]' : ''}`;
}

/** Free text (an error message, a SQL statement, a span name) with URLs, bot tokens and numbers taken out. */
export function scrubbedText(text: string): string {
  return text
    .replace(URL_IN_TEXT, (url) => templatedUrl(url))
    .replace(BOT_TOKEN_IN_TEXT, '***')
    .replace(/(^|\s)(\/[^\s]*)/g, (_, space: string, path: string) => `${space}${templatedPath(path)}`)
    .replace(PHONE_IN_TEXT, '{phone}');
}

const URL_ATTRIBUTES = new Set(['url.full', 'http.url', 'url.original']);
const PATH_ATTRIBUTES = new Set(['url.path', 'http.target', 'http.route', 'url.template', 'express.name']);
/** Attributes dropped whole: the query string (a receiver's token, a MAX access_token) has no template. */
const DROPPED_ATTRIBUTES = new Set(['url.query']);

/** An attribute's value as a trace may keep it (the API types values as unknown: strings and arrays of them). */
function valueOf(key: string, value: AttributeValue): AttributeValue {
  if (typeof value !== 'string') {
    if (Array.isArray(value)) return value.map((v: unknown) => (typeof v === 'string' ? scrubbedText(v) : v));
    return value;
  }
  if (URL_ATTRIBUTES.has(key)) return templatedUrl(value);
  if (PATH_ATTRIBUTES.has(key)) return templatedPath(value);
  return scrubbedText(value);
}

/** The attributes as a trace may keep them (a new object; undefined values stay out). */
export function redactedAttributes(attributes: Attributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (DROPPED_ATTRIBUTES.has(key)) continue;
    const v = valueOf(key, value);
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/**
 * A span processor that rewrites every span as it ends (the SDK's `onEnding`, while the span still takes
 * changes, before any exporter sees it): URL and route attributes to templates, query strings dropped, bot
 * tokens, phone numbers and token-like path segments out of every string attribute, event attribute (an
 * exception's message), status message and the name. Registered first, ahead of the exporting processor.
 */
export class RedactingSpanProcessor implements SpanProcessor {
  onStart(): void {}

  onEnding(span: Span): void {
    const attributes: Record<string, AttributeValue> = span.attributes;
    for (const key of Object.keys(attributes)) {
      if (DROPPED_ATTRIBUTES.has(key)) {
        delete attributes[key];
        continue;
      }
      const value = valueOf(key, attributes[key]);
      if (value !== attributes[key]) span.setAttribute(key, value);
    }
    for (const event of span.events) {
      // The SDK's events are plain objects it keeps for the exporter: rewritten in place.
      if (event.attributes)
        (event as { attributes: Attributes }).attributes = redactedAttributes(event.attributes);
    }
    if (span.status.message) span.setStatus({ ...span.status, message: scrubbedText(span.status.message) });
    const name = scrubbedText(span.name);
    if (name !== span.name) span.updateName(name);
  }

  onEnd(): void {}

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
