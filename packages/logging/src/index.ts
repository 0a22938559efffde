import { AsyncLocalStorage } from 'node:async_hooks';
import { context as otelContext, isSpanContextValid, trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { safeErrorSerializer } from './errors.js';

export type { Logger };
export { errorSummary, isDatabaseError, safeErrorSerializer, sqlStateClass } from './errors.js';

/** Ids that tie log lines of one request or event chain together. */
export interface LogContext {
  requestId?: string;
  correlationId?: string;
  causationId?: string;
  eventId?: string;
}

const context = new AsyncLocalStorage<LogContext>();

/** Runs `fn` with ids that every log line written inside it (however deep, across awaits) carries. */
export function withLogContext<T>(ids: LogContext, fn: () => T): T {
  return context.run({ ...context.getStore(), ...ids }, fn);
}

export function currentLogContext(): LogContext {
  return context.getStore() ?? {};
}

/**
 * Keys never written to logs whatever object they appear in. Message text is personal data and is left
 * out by the callers (they log ids and lengths, not bodies).
 */
export const REDACTED_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers.authorization',
  '*.apiKey',
  '*.api_key',
  '*.token',
  '*.password',
  '*.secret',
  '*.secrets',
  'apiKey',
  'api_key',
  'token',
  'password',
  'secret',
];

/**
 * A URL as it may be logged, stored for display or put in an event: no user name or password, no query
 * (it may carry a receiver's token; `?[redacted]` says there was one), no fragment. Something that is not
 * a URL gives `[invalid url]` rather than itself.
 */
export function redactedUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return '[invalid url]';
  }
  const query = url.search ? '?[redacted]' : '';
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  return `${url.toString()}${query}`;
}

/**
 * What every line carries besides its own fields: the ids of the log context, and the trace and span ids
 * of the active span (named as OpenTelemetry names them in JSON logs), so a line is found from its trace.
 */
function logFields(): object {
  const span = trace.getSpanContext(otelContext.active());
  if (!span || !isSpanContextValid(span)) return { ...context.getStore() };
  return {
    ...context.getStore(),
    trace_id: span.traceId,
    span_id: span.spanId,
    trace_flags: `0${span.traceFlags.toString(16)}`,
  };
}

export interface CreateLoggerOptions {
  service: string;
  level?: string;
  /** Where lines go (stdout by default); tests pass a stream to read them back. */
  destination?: DestinationStream;
}

/** JSON lines with the service name, ISO time, and the ids of the current log context. */
export function createLogger(options: CreateLoggerOptions): Logger {
  const config: LoggerOptions = {
    level: options.level ?? 'info',
    base: { service: options.service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    // Errors without the values they quote (a PostgreSQL error's row): see errors.ts.
    serializers: { err: safeErrorSerializer, error: safeErrorSerializer },
    mixin: logFields,
  };
  // Written synchronously: lines reach stdout in the order they were logged, and the last ones (a fatal
  // error, the shutdown) before the process exits. pino's default asynchronous stdout writer was seen to
  // print a line logged during shutdown after later ones.
  return pino(config, options.destination ?? pino.destination({ dest: 1, sync: true }));
}

let warningFilterInstalled = false;

/**
 * kafkajs 2.2.4 schedules an idle timer with a negative delay, which Node 24 reports as a
 * TimeoutNegativeWarning. @mds/kafka's clients have that timer fixed (its kafkajs-fixes.ts); a bare kafkajs
 * client (local-infra's broker probe) still arms it. Hide that one warning and print every other as Node would.
 */
export function hideKafkajsTimerWarning(): void {
  if (warningFilterInstalled) return;
  warningFilterInstalled = true;
  process.removeAllListeners('warning');
  process.on('warning', (warning) => {
    if (warning.name === 'TimeoutNegativeWarning') return;
    console.warn(`(node:${process.pid}) ${warning.name}: ${warning.message}`);
  });
}
