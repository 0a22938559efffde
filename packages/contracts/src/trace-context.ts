import { context, isSpanContextValid, trace } from '@opentelemetry/api';

/** W3C Trace Context as the event envelope and the `traceparent` Kafka header carry it. */
export interface TraceContext {
  /** "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>", or empty when there is no trace. */
  traceparent: string;
  tracestate: string;
}

const NO_TRACE: TraceContext = { traceparent: '', tracestate: '' };

/**
 * The trace context of the span active where this is called, or empty ones. Without a tracer provider
 * (tracing off) there is never an active span, and this costs one lookup of the active context.
 */
export function activeTraceContext(): TraceContext {
  const span = trace.getSpanContext(context.active());
  if (!span || !isSpanContextValid(span)) return NO_TRACE;
  const flags = span.traceFlags.toString(16).padStart(2, '0');
  return {
    traceparent: `00-${span.traceId}-${span.spanId}-${flags}`,
    tracestate: span.traceState?.serialize() ?? '',
  };
}
