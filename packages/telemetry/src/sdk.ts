import { createRequire } from 'node:module';
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { GrpcInstrumentation } from '@opentelemetry/instrumentation-grpc';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace';
import { RedactingSpanProcessor } from './redaction.js';
import type { TracingSettings } from './tracing.js';

/** Requests to these paths (probes, scrapes) make no spans: they come every few seconds and tell nothing. */
const OPS_PATHS = new Set(['/healthz', '/readyz', '/livez', '/metrics']);

function samplerOf(s: TracingSettings): Sampler {
  const ratio = new TraceIdRatioBasedSampler(s.samplerRatio);
  switch (s.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
    default:
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * What every span goes through: the redaction first (URLs and routes to templates, no query, token or number),
 * while the span still takes changes, then the batch export. Nothing reaches an exporter unredacted.
 */
export function spanProcessorsOf(exporter: SpanExporter, batch: TracingSettings['batch']): SpanProcessor[] {
  return [new RedactingSpanProcessor(), new BatchSpanProcessor({ exporter, ...batch })];
}

/**
 * The CommonJS packages the instrumentations patch, required once they are registered. An ES module's
 * `import express from 'express'` does not pass through require, so the hook would never see it; required
 * here first, the package is patched in place, and the ES modules that import it later get the same
 * (patched) exports from the require cache.
 */
const PATCHED_PACKAGES = ['express', '@grpc/grpc-js', 'pg'];

/**
 * Registers a tracer provider exporting over OTLP/HTTP (spans redacted first: spanProcessorsOf), W3C trace
 * context propagation (traceparent and tracestate only: no baggage, which would carry whatever a caller put
 * in it to every service and endpoint downstream) and the instrumentations of what the services use
 * (node:http, express, @grpc/grpc-js, pg, undici/fetch). Loaded only when tracing is on. Returns how to flush
 * and stop it.
 */
export function startSdk(s: TracingSettings, serviceName: string, script?: string): () => Promise<void> {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const exporter = s.protocol === 'http/json' ? new OtlpJsonExporter() : new OtlpProtobufExporter();
  const provider = new TracerProvider({
    resource,
    sampler: samplerOf(s),
    spanProcessors: spanProcessorsOf(exporter, s.batch),
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const unregister = registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => OPS_PATHS.has((req.url ?? '').split('?')[0]!),
        requireParentforOutgoingSpans: true,
      }),
      // Route handlers only: a span per middleware or router would cost more than it tells.
      new ExpressInstrumentation({
        ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER],
      }),
      new GrpcInstrumentation(),
      // Queries outside a trace (polls of outboxes and claim loops) make no spans of their own.
      new PgInstrumentation({ requireParentSpan: true }),
      new UndiciInstrumentation({ requireParentforSpans: true }),
    ],
  });
  const requireFromService = createRequire(script ?? import.meta.url);
  for (const name of PATCHED_PACKAGES) {
    try {
      requireFromService(name);
    } catch {
      // not a package this service uses
    }
  }
  return async () => {
    unregister();
    await provider.shutdown();
  };
}
