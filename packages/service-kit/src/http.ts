import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import { Counter, Histogram, type Registry } from 'prom-client';
import { withLogContext, type Logger } from '@mds/logging';
import { Problem } from './problems.js';

export interface ReadinessCheck {
  name: string;
  check(): Promise<boolean> | boolean;
}

export interface OpsOptions {
  logger: Logger;
  registry: Registry;
  /** Every check must pass for /readyz to answer 200. */
  readiness: ReadinessCheck[];
  /** False until start-up has finished and again once shutdown begins. */
  isReady: () => boolean;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

/** X-Request-Id: the caller's when it is sane, a new UUID otherwise; echoed on the response, set in the log context. */
export function requestId() {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.header('x-request-id');
    const id = incoming && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', id);
    res.locals.requestId = id;
    withLogContext({ requestId: id }, next);
  };
}

/**
 * One access log line and two metrics per request. It logs the route pattern, status and duration only:
 * never headers (keys, tokens) or bodies (message text).
 */
export function accessLog(logger: Logger, registry: Registry) {
  const requests = new Counter({
    name: 'mds_http_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['method', 'route', 'status'],
    registers: [registry],
  });
  const seconds = new Histogram({
    name: 'mds_http_request_seconds',
    help: 'HTTP request duration by route',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  return (req: Request, res: Response, next: NextFunction) => {
    const started = performance.now();
    res.on('finish', () => {
      const route = (req.route as { path?: string } | undefined)?.path
        ? `${req.baseUrl}${(req.route as { path: string }).path}`
        : 'unmatched';
      const duration = (performance.now() - started) / 1000;
      requests.inc({ method: req.method, route, status: String(res.statusCode) });
      seconds.observe({ method: req.method, route }, duration);
      if (route === '/metrics' || route === '/healthz' || route === '/readyz') return;
      logger.info(
        {
          method: req.method,
          route,
          status: res.statusCode,
          durationMs: Math.round(duration * 1000),
          requestId: res.locals.requestId as string,
        },
        'request',
      );
    });
    next();
  };
}

/** /healthz (the process lives), /readyz (it can do its work now), /metrics (Prometheus). */
export function opsRoutes(o: OpsOptions): express.Router {
  const router = express.Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    const results = await Promise.all(
      o.readiness.map(async (c) => {
        try {
          return [c.name, await c.check()] as const;
        } catch {
          return [c.name, false] as const;
        }
      }),
    );
    const ready = o.isReady() && results.every(([, ok]) => ok);
    res.status(ready ? 200 : 503).json({
      status: ready ? 'ready' : 'not ready',
      checks: Object.fromEntries([['started', o.isReady()], ...results]),
    });
  });
  router.get('/metrics', async (_req, res) => {
    res.setHeader('Content-Type', o.registry.contentType);
    res.send(await o.registry.metrics());
  });
  return router;
}

function bareApp(o: OpsOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId());
  app.use(accessLog(o.logger, o.registry));
  return app;
}

/**
 * An express app with request ids and access log; the service adds its own routes. The ops routes
 * (/healthz, /readyz, /metrics) are on it too unless `separateOps` is set: then they are served by
 * `listenOps` on a port of their own (OPS_PORT), kept off the public one, and this app has /healthz only.
 */
export function createHttpApp(o: OpsOptions & { separateOps?: boolean }): Express {
  const app = bareApp(o);
  if (o.separateOps) {
    app.get('/healthz', (_req, res) => {
      res.json({ status: 'ok' });
    });
  } else {
    app.use(opsRoutes(o));
  }
  return app;
}

/** The ops routes on a listener of their own (OPS_PORT): what Kubernetes probes and Prometheus scrape. */
export function listenOps(o: OpsOptions, host: string, port: number): Promise<RunningHttpServer> {
  // No access log: the public app's metrics are registered once, and probes and scrapes are not logged anyway.
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(opsRoutes(o));
  app.use((_req, res) => {
    res.status(404).json({ status: 404, code: 'not_found', title: 'Not found' });
  });
  return listen(app, host, port);
}

/**
 * The service's HTTP server on HTTP_HOST:HTTP_PORT and, when OPS_PORT is set, its ops listener
 * (`createHttpApp` must have been built with `separateOps` then), each stopped by the lifecycle; the ops
 * listener stops last, so /readyz answers 503 while the public server drains.
 */
export async function serveHttp(
  app: Express,
  ops: OpsOptions,
  config: { HTTP_HOST: string; HTTP_PORT: number; OPS_PORT?: number | undefined },
  lifecycle: { onStop(name: string, stop: () => Promise<void>): void },
): Promise<{ port: number; opsPort?: number }> {
  const opsServer =
    config.OPS_PORT === undefined ? undefined : await listenOps(ops, config.HTTP_HOST, config.OPS_PORT);
  if (opsServer) lifecycle.onStop('ops http', () => opsServer.close());
  const http = await listen(app, config.HTTP_HOST, config.HTTP_PORT);
  lifecycle.onStop('http', () => http.close());
  return { port: http.port, ...(opsServer ? { opsPort: opsServer.port } : {}) };
}

export interface RunningHttpServer {
  port: number;
  /**
   * Stops accepting, lets requests in progress finish, and ends every keep-alive connection: idle ones at once,
   * busy ones once their response is done (answered with `Connection: close`).
   */
  close(): Promise<void>;
}

export function listen(app: Express, host: string, port: number): Promise<RunningHttpServer> {
  return new Promise((resolve, reject) => {
    const server: Server = app.listen(port, host);
    server.keepAliveTimeout = 65_000;
    // Node's server.close() closes the connections idle at that moment only: one busy then stays open after its
    // response, and a client that keeps it busy (keep-alive, as load balancers do) holds the server open until
    // the shutdown timeout. So while closing, every response says `Connection: close`, and a connection is closed
    // as soon as it goes idle.
    let closing = false;
    const inFlight = new Set<ServerResponse>();
    server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
      if (closing) res.setHeader('connection', 'close');
      inFlight.add(res);
      res.once('close', () => {
        inFlight.delete(res);
        if (closing) server.closeIdleConnections();
      });
    });
    server.once('error', reject);
    server.once('listening', () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise<void>((done) => {
            closing = true;
            for (const res of inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
            server.close(() => done());
            server.closeIdleConnections();
          }),
      });
    });
  });
}

/**
 * Admits requests carrying `Authorization: Bearer <token>` (compared in constant time); anything else is a
 * `401 unauthorized` problem whose detail names the setting that holds the token.
 */
export function bearerGuard(token: string, setting: string) {
  const expected = Buffer.from(token);
  return (req: Request, _res: Response, next: NextFunction) => {
    const presented = Buffer.from(/^Bearer (.+)$/.exec(req.header('authorization') ?? '')?.[1] ?? '');
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      return next(
        new Problem(
          401,
          'unauthorized',
          'Unauthorized',
          `This API needs "Authorization: Bearer <${setting}>".`,
        ),
      );
    }
    next();
  };
}
