import { spawn } from 'node:child_process';
import http from 'node:http';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@mds/logging';
import {
  createHttpApp,
  createMetricsRegistry,
  Lifecycle,
  listen,
  serveHttp,
  type RunningHttpServer,
} from './index.js';

const servers: RunningHttpServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

function capturedLogger() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _e, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, logger: createLogger({ service: 'kit-test', destination }) };
}

async function serve(options: { ready: () => boolean; checks?: { name: string; check: () => boolean }[] }) {
  const { lines, logger } = capturedLogger();
  const registry = createMetricsRegistry('kit-test');
  const app = createHttpApp({ logger, registry, readiness: options.checks ?? [], isReady: options.ready });
  app.post('/echo', (_req, res) => {
    res.status(202).json({ ok: true });
  });
  const server = await listen(app, '127.0.0.1', 0);
  servers.push(server);
  return { base: `http://127.0.0.1:${server.port}`, lines };
}

describe('ops endpoints', () => {
  it('/healthz answers while the process lives; /readyz only when started and every check passes', async () => {
    let ready = false;
    let databaseUp = true;
    const { base } = await serve({
      ready: () => ready,
      checks: [{ name: 'database', check: () => databaseUp }],
    });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    ready = true;
    const ok = await fetch(`${base}/readyz`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ status: 'ready', checks: { started: true, database: true } });
    databaseUp = false;
    const down = await fetch(`${base}/readyz`);
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ checks: { database: false } });
  });

  it('/metrics exposes request counts by route and the default process metrics, labelled with the service', async () => {
    const { base } = await serve({ ready: () => true });
    await fetch(`${base}/echo`, { method: 'POST' });
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(
      /mds_http_requests_total\{method="POST",route="\/echo",status="202",service="kit-test"\} 1/,
    );
    expect(text).toMatch(/process_resident_memory_bytes\{service="kit-test"\}/);
  });
});

describe('the ops listener (OPS_PORT)', () => {
  it('serves /readyz and /metrics on its own port, and the public port shows neither', async () => {
    const { logger } = capturedLogger();
    const registry = createMetricsRegistry('kit-test');
    const ops = { logger, registry, readiness: [], isReady: () => true };
    const app = createHttpApp({ ...ops, separateOps: true });
    app.post('/echo', (_req, res) => {
      res.status(202).json({ ok: true });
    });
    const lifecycle = new Lifecycle(logger, 5_000);
    const ports = await serveHttp(app, ops, { HTTP_HOST: '127.0.0.1', HTTP_PORT: 0, OPS_PORT: 0 }, lifecycle);
    try {
      const publicBase = `http://127.0.0.1:${ports.port}`;
      const opsBase = `http://127.0.0.1:${ports.opsPort!}`;
      expect(ports.opsPort).not.toBe(ports.port);
      expect((await fetch(`${publicBase}/echo`, { method: 'POST' })).status).toBe(202);
      expect((await fetch(`${publicBase}/readyz`)).status).toBe(404);
      expect((await fetch(`${publicBase}/metrics`)).status).toBe(404);
      expect((await fetch(`${publicBase}/healthz`)).status).toBe(200);
      expect((await fetch(`${opsBase}/readyz`)).status).toBe(200);
      expect((await fetch(`${opsBase}/healthz`)).status).toBe(200);
      // The public port's requests are counted where Prometheus scrapes.
      expect(await (await fetch(`${opsBase}/metrics`)).text()).toMatch(
        /mds_http_requests_total\{method="POST",route="\/echo",status="202",service="kit-test"\} 1/,
      );
      expect((await fetch(`${opsBase}/echo`, { method: 'POST' })).status).toBe(404);
    } finally {
      await lifecycle.stop();
    }
  });
});

describe('listen', () => {
  it('once closing, answers a keep-alive client with Connection: close and stops without waiting for it', async () => {
    const { logger } = capturedLogger();
    const app = createHttpApp({
      logger,
      registry: createMetricsRegistry('kit-test'),
      readiness: [],
      isReady: () => true,
    });
    app.get('/slow', (_req, res) => void setTimeout(() => res.json({ ok: true }), 100));
    const server = await listen(app, '127.0.0.1', 0);
    // One keep-alive connection, kept busy: a new request as soon as the last is answered.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; connection: string | undefined }>((resolve) => {
        http
          .get({ host: '127.0.0.1', port: server.port, path: '/slow', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
          })
          .on('error', () => resolve({ status: 0, connection: undefined }));
      });
    try {
      let busy = true;
      const answers: { status: number; connection: string | undefined }[] = [];
      const client = (async () => {
        while (busy) answers.push(await get());
      })();
      await new Promise((r) => setTimeout(r, 250));
      const began = Date.now();
      await server.close();
      const took = Date.now() - began;
      busy = false;
      await client;
      expect(took).toBeLessThan(1_000);
      expect(answers[0]).toEqual({ status: 200, connection: 'keep-alive' });
      // The request answered while closing told the client to close the connection; none was cut off.
      expect(answers.filter((a) => a.status === 200 && a.connection === 'close')).toHaveLength(1);
    } finally {
      agent.destroy();
    }
  });
});

describe('request ids and access log', () => {
  it('echo a sane X-Request-Id, replace an insane one, and log no header values', async () => {
    const { base, lines } = await serve({ ready: () => true });
    const given = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'X-Request-Id': 'abc-123', 'X-API-Key': 'sk_live_secret' },
    });
    expect(given.headers.get('x-request-id')).toBe('abc-123');
    const replaced = await fetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'X-Request-Id': 'bad id with spaces <script>' },
    });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const log = lines.join('');
    expect(log).toContain('"requestId":"abc-123"');
    expect(log).toContain('"route":"/echo"');
    expect(log).not.toContain('sk_live_secret');
  });
});

describe('Lifecycle', () => {
  it('stops in reverse order, once, and goes on past a failing or slow step', async () => {
    const { logger } = capturedLogger();
    const order: string[] = [];
    const lifecycle = new Lifecycle(logger, 300);
    lifecycle.onStop('database', () => void order.push('database'));
    lifecycle.onStop('stuck', () => new Promise(() => order.push('stuck')));
    lifecycle.onStop('broken', () => {
      order.push('broken');
      throw new Error('x');
    });
    lifecycle.onStop('consumer', () => void order.push('consumer'));
    await Promise.all([lifecycle.stop(), lifecycle.stop()]);
    expect(order).toEqual(['consumer', 'broken', 'stuck', 'database']);
  });
});

describe('runService', () => {
  const script = join(import.meta.dirname, '../test/tiny-service.ts');
  function run(env: Record<string, string> = {}) {
    const child = spawn(process.execPath, ['--conditions=@mds/source', '--import', 'tsx', script], {
      env: { ...process.env, LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    return { child, output: () => out, exited };
  }

  it('stops everything in reverse order on SIGTERM and exits 0', async () => {
    const service = run();
    const deadline = Date.now() + 20_000;
    while (!/PORT=(\d+)/.test(service.output()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const port = /PORT=(\d+)/.exec(service.output())![1];
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    const stopped = [...service.output().matchAll(/"component":"([\w-]+)","msg":"stopped"/g)].map(
      (m) => m[1],
    );
    // Telemetry last: the spans of the shutdown itself are exported (nothing to do here, tracing is off).
    expect(stopped).toEqual(['slow', 'http', 'first-started', 'telemetry']);
  });

  it('exits 1 when start-up fails, after stopping what had started', async () => {
    const service = run({ FAIL_START: '1' });
    expect(await service.exited).toBe(1);
    expect(service.output()).toContain('failed to start');
    expect(service.output()).toContain('"component":"http","msg":"stopped"');
  });

  it('does not hang on a component that will not stop', async () => {
    const service = run({ SLOW_STOP_MS: '60000' });
    const deadline = Date.now() + 20_000;
    while (!service.output().includes('PORT=') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    const started = Date.now();
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(service.output()).toContain('did not stop in time');
  });
});
