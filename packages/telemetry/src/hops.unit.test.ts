import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newEvent, topics, type MessageEvent } from '@mds/contracts';
import { headersOf } from '@mds/kafka';
import { capturedLogger } from '@mds/logging/testing';
import { inHop, isTracing, shutdownTelemetry, SpanKind, startHop, tracingStarted } from './index.js';

// Tracing on, with the SDK's in-memory exporter in place of OTLP (the e2e trace test exports over OTLP).

const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });

beforeAll(() => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  tracingStarted(() => provider.shutdown());
});
afterAll(() => shutdownTelemetry());
beforeEach(() => exporter.reset());

const capture = () => capturedLogger('hops');

const sent = (eventId: string) =>
  newEvent<MessageEvent>({
    eventId,
    occurredAt: new Date('2026-01-01T00:00:00Z'),
    companyId: 'c',
    streamId: 'm-1',
    correlationId: 'm-1',
    producer: 'test',
    event: { $case: 'messageSent', value: { botId: 'b', providerMessageId: '1', attempts: 1 } },
  });

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const WRITER_SPAN = 'b7ad6b7169203331';
const origin = { traceparent: `00-${TRACE_ID}-${WRITER_SPAN}-01`, eventId: 'e-1', correlationId: 'm-1' };

describe('hops with tracing on', () => {
  it("continue the event's trace: the span is the writer's child, and events made in it carry the span", async () => {
    expect(isTracing()).toBe(true);
    const event = await inHop(
      'registry route',
      origin,
      async () => {
        await new Promise((r) => setTimeout(r, 1));
        return sent('e-2');
      },
      { kind: SpanKind.CONSUMER, attributes: { 'mds.message_id': 'm-1' } },
    );
    const [span] = exporter.getFinishedSpans();
    expect(span!.name).toBe('registry route');
    expect(span!.kind).toBe(SpanKind.CONSUMER);
    expect(span!.spanContext().traceId).toBe(TRACE_ID);
    expect(span!.parentSpanContext?.spanId).toBe(WRITER_SPAN);
    expect(span!.attributes['mds.message_id']).toBe('m-1');
    expect(event.metadata.traceparent).toBe(`00-${TRACE_ID}-${span!.spanContext().spanId}-01`);
  });

  it('carries the context through encoding (a table or Kafka) to the next hop, and into the traceparent header', async () => {
    const first = startHop('sender send', origin);
    const bytes = first.run(() => topics.message.codec.encode(sent('e-3')));
    first.end();
    const stored = topics.message.codec.decode(bytes);
    expect(headersOf(stored, 'mds.events.v1.MessageEvent')).toMatchObject({
      traceparent: stored.metadata.traceparent,
    });
    await inHop('webhook deliver', stored.metadata, () => Promise.resolve());
    const [send, deliver] = exporter.getFinishedSpans();
    expect(deliver!.parentSpanContext?.spanId).toBe(send!.spanContext().spanId);
    expect(deliver!.spanContext().traceId).toBe(TRACE_ID);
  });

  it('starts from the active span when the origin has no trace context (the first hop)', async () => {
    const tracer = trace.getTracer('test');
    await tracer.startActiveSpan('POST /api/v1/send', async (server) => {
      await inHop('gateway accept', undefined, () => Promise.resolve());
      server.end();
    });
    const [accept, server] = exporter.getFinishedSpans();
    expect(accept!.parentSpanContext?.spanId).toBe(server!.spanContext().spanId);
    // An envelope without trace context starts a new trace rather than failing.
    await inHop('untraced', { traceparent: '', eventId: 'e-4' }, () => Promise.resolve());
    expect(exporter.getFinishedSpans()[2]!.parentSpanContext).toBeUndefined();
  });

  it('write trace and span ids and the event ids on log lines made in them', async () => {
    const { lines, logger } = capture();
    await inHop('hop', origin, async () => {
      await Promise.resolve();
      logger.info('inside');
    });
    logger.info('outside');
    const [span] = exporter.getFinishedSpans();
    expect(lines[0]).toMatchObject({
      msg: 'inside',
      trace_id: TRACE_ID,
      span_id: span!.spanContext().spanId,
      trace_flags: '01',
      correlationId: 'm-1',
      eventId: 'e-1',
    });
    expect(lines[1]).not.toHaveProperty('trace_id');
    expect(lines[1]).not.toHaveProperty('correlationId');
  });

  it('end failed with the error when the work fails, once however often they are ended', async () => {
    await expect(inHop('fails', origin, () => Promise.reject(new Error('database away')))).rejects.toThrow();
    const hop = startHop('twice', origin);
    hop.end();
    hop.end(new Error('late'));
    const [failed, twice] = exporter.getFinishedSpans();
    expect(failed!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'database away' });
    expect(failed!.events.map((e) => e.name)).toEqual(['exception']);
    expect(exporter.getFinishedSpans()).toHaveLength(2);
    expect(twice!.status.code).toBe(SpanStatusCode.UNSET);
  });
});
