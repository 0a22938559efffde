// What tracing adds to one message's CPU in the pipeline, off (no OTEL_* variables: the default) and on.
// Per message the pipeline runs 4 hops (gateway accept, registry route, sender send, webhook deliver) and
// makes about 5 events (accepted, routed, sent, webhook attempted and delivered), each reading the active
// trace context. Measured side by side against the same work without them, alternating, CPU time of this
// process (process.cpuUsage), N operations a round.
//
//   node --conditions=@mds/source --import tsx bench/overhead.bench.ts [on]
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BatchSpanProcessor, TracerProvider, type SpanExporter } from '@opentelemetry/sdk-trace';
import { newEvent, type MessageEvent } from '@mds/contracts';
import { inHop, startHop, tracingStarted } from '../src/index.js';

const N = 100_000;
const ROUNDS = 5;
const HOPS_PER_MESSAGE = 4;
const EVENTS_PER_MESSAGE = 5;

if (process.argv[2] === 'on') {
  // The SDK as the start-up sets it up, exporting to nowhere (the export itself runs off the hot path).
  const exporter: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };
  const provider = new TracerProvider({ spanProcessors: [new BatchSpanProcessor({ exporter })] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  tracingStarted(() => provider.shutdown());
}

const origin = {
  traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  tracestate: '',
  eventId: 'e-1',
  correlationId: 'm-1',
};
const at = new Date();
const untraced = { traceparent: '', tracestate: '' };
const make = (trace?: typeof untraced) =>
  newEvent<MessageEvent>({
    eventId: 'e-2',
    occurredAt: at,
    companyId: 'c',
    streamId: 'm-1',
    correlationId: 'm-1',
    producer: 'bench',
    event: { $case: 'messageSent', value: { botId: 'b', providerMessageId: '1', attempts: 1 } },
    ...(trace ? { trace } : {}),
  });

const work = () => Promise.resolve(make(untraced));

async function cpu(fn: () => Promise<unknown>): Promise<number> {
  const start = process.cpuUsage();
  for (let i = 0; i < N; i++) await fn();
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / N; // ns per operation
}

const results = {
  hopBase: [] as number[],
  hop: [] as number[],
  eventBase: [] as number[],
  event: [] as number[],
};
for (let round = 0; round < ROUNDS + 1; round++) {
  const hopBase = await cpu(() => work());
  const hop = await cpu(() => inHop('hop', origin, work));
  const eventBase = await cpu(() => Promise.resolve(make(untraced)));
  const event = await cpu(() => Promise.resolve(make()));
  if (round === 0) continue; // warm-up
  results.hopBase.push(hopBase);
  results.hop.push(hop);
  results.eventBase.push(eventBase);
  results.event.push(event);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const hopCost = median(results.hop) - median(results.hopBase);
const eventCost = median(results.event) - median(results.eventBase);
const perMessage = HOPS_PER_MESSAGE * hopCost + EVENTS_PER_MESSAGE * eventCost;
console.log(
  JSON.stringify({
    tracing: process.argv[2] === 'on' ? 'on' : 'off',
    hopNs: Math.round(hopCost),
    eventTraceContextNs: Math.round(eventCost),
    perMessageNs: Math.round(perMessage),
    rounds: { ...Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.map(Math.round)])) },
  }),
);
void startHop; // the synchronous form costs the same as inHop's start
