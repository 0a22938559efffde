import { createRequire } from 'node:module';
import type * as HttpModule from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { context, propagation, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSdk } from './sdk.js';

// The SDK as a service starts it (startSdk, exporting OTLP/HTTP JSON to a receiver on loopback), with the real
// instrumentations: what leaves the process (the headers of an outgoing call, the exported spans) carries the
// trace context and nothing a caller put in baggage, and no token, query or number of the URLs it saw.

const TOKEN = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
const PHONE = '79161234567';
const exports: string[] = [];
const seen: IncomingHttpHeaders[] = [];
let stop: () => Promise<void>;
let collector: Server;
let upstream: Server;
let upstreamUrl = '';

const listen = (server: Server) =>
  new Promise<string>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  );

beforeAll(async () => {
  const { createServer } = await import('node:http');
  collector = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      exports.push(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = await listen(collector);
  stop = startSdk({ protocol: 'http/json', sampler: 'always_on', samplerRatio: 1, batch: {} }, 'sdk-test');
  // Required after startSdk, as a service's modules load after @mds/telemetry/start: the instrumentation patches it.
  const http = createRequire(import.meta.url)('node:http') as typeof HttpModule;
  upstream = http.createServer((req, res) => {
    seen.push(req.headers);
    res.writeHead(200).end('ok');
  });
  upstreamUrl = await listen(upstream);
});

afterAll(async () => {
  await new Promise((r) => upstream.close(r));
  await new Promise((r) => collector.close(r));
  delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
});

describe('the SDK as started by a service', () => {
  it('propagates the trace context and never baggage', async () => {
    const baggage = propagation.createBaggage({ phone: { value: PHONE } });
    const tracer = trace.getTracer('test');
    await context.with(propagation.setBaggage(context.active(), baggage), () =>
      tracer.startActiveSpan('caller', async (span) => {
        const carrier: Record<string, string> = {};
        propagation.inject(context.active(), carrier);
        expect(Object.keys(carrier)).toEqual(['traceparent']);
        await (await fetch(`${upstreamUrl}/bot${TOKEN}/sendMessage?chat_id=42`)).text();
        await (
          await fetch(`${upstreamUrl}/api/clients/${PHONE}`, { headers: { baggage: `phone=${PHONE}` } })
        ).text();
        span.end();
      }),
    );
    expect(seen[0]).toHaveProperty('traceparent');
    expect(seen[0]).not.toHaveProperty('baggage');
  });

  it('exports the client and server spans of those calls with templated URLs only', async () => {
    await stop();
    const body = exports.join('\n');
    // Both sides of both calls were exported ...
    expect(body).toContain('/bot***/sendMessage?[redacted]');
    expect(body).toContain('/api/clients/{phone}');
    // ... and nothing of the token, the query or the number.
    for (const secret of [TOKEN, PHONE, 'chat_id']) expect(body).not.toContain(secret);
  });
});
