import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { withLogContext, type LogContext } from '@mds/logging';

/** What an event's envelope says of where it comes from: its trace context and the ids logs are bound to. */
export interface EventOrigin {
  traceparent?: string;
  tracestate?: string;
  eventId?: string;
  correlationId?: string;
  causationId?: string;
}

/** One hop of an event's trace (a span, when tracing is on), with the event's ids bound to log lines. */
export interface Hop {
  /** Runs `fn` in the hop: its events carry the hop's trace context, its log lines the event's ids. */
  run<T>(fn: () => T): T;
  /** Ends the span (failed, with the error, when one is given). Idempotent. */
  end(error?: unknown): void;
}

const tracer = trace.getTracer('@mds/telemetry');
let tracing = false;
let shutdown: (() => Promise<void>) | undefined;

/** Called by the start-up once a tracer provider exports spans (and how to flush and stop it). */
export function tracingStarted(stop: () => Promise<void>): void {
  tracing = true;
  shutdown = stop;
}

/** Whether this process exports traces (OTEL_* variables set). */
export function isTracing(): boolean {
  return tracing;
}

/** Flushes the spans not yet exported and stops exporting; nothing when tracing is off. */
export async function shutdownTelemetry(): Promise<void> {
  const stop = shutdown;
  shutdown = undefined;
  tracing = false;
  await stop?.();
}

const carrierGetter = {
  keys: (carrier: EventOrigin) => Object.keys(carrier),
  get: (carrier: EventOrigin, key: string) =>
    key === 'traceparent'
      ? carrier.traceparent || undefined
      : key === 'tracestate'
        ? carrier.tracestate || undefined
        : undefined,
};

/** The context an event's trace continues from: its envelope's traceparent, or none (a new trace). */
export function contextOf(origin: EventOrigin): Context {
  if (!origin.traceparent) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, origin, carrierGetter);
}

function logIds(origin: EventOrigin): LogContext {
  const ids: LogContext = {};
  if (origin.correlationId) ids.correlationId = origin.correlationId;
  if (origin.causationId) ids.causationId = origin.causationId;
  if (origin.eventId) ids.eventId = origin.eventId;
  return ids;
}

function endSpan(span: Span, error?: unknown): void {
  if (error !== undefined) {
    const failure = error instanceof Error ? error : new Error(JSON.stringify(error) ?? 'undefined');
    span.recordException(failure);
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
  }
  span.end();
}

/**
 * Starts one hop of the trace an event belongs to: a span named `name`, child of the span that wrote the
 * event (across Kafka and any table that kept the event), or of the active span when the origin carries
 * no trace context (`origin` undefined: a hop that starts here, e.g. the gateway accepting a request).
 * With tracing off it only binds the event's ids to log lines.
 */
export function startHop(
  name: string,
  origin: EventOrigin | undefined,
  o: { kind?: SpanKind; attributes?: Attributes } = {},
): Hop {
  const ids = origin ? logIds(origin) : {};
  if (!tracing) return { run: (fn) => withLogContext(ids, fn), end: () => undefined };
  const parent = origin?.traceparent ? contextOf(origin) : context.active();
  const span = tracer.startSpan(
    name,
    { kind: o.kind ?? SpanKind.INTERNAL, attributes: o.attributes },
    parent,
  );
  const active = trace.setSpan(parent, span);
  let ended = false;
  return {
    run: (fn) => context.with(active, () => withLogContext(ids, fn)),
    end: (error) => {
      if (ended) return;
      ended = true;
      endSpan(span, error);
    },
  };
}

/** Runs `fn` as one hop of the event's trace (see startHop); the span ends when `fn` settles. */
export function inHop<T>(
  name: string,
  origin: EventOrigin | undefined,
  fn: () => Promise<T>,
  o: { kind?: SpanKind; attributes?: Attributes } = {},
): Promise<T> {
  // Off, the hop is the log binding alone (no span, no extra await): this runs once per message per hop.
  if (!tracing) return origin ? withLogContext(logIds(origin), fn) : fn();
  const hop = startHop(name, origin, o);
  return hop.run(fn).then(
    (result) => {
      hop.end();
      return result;
    },
    (error: unknown) => {
      hop.end(error);
      throw error;
    },
  );
}

export { SpanKind };
