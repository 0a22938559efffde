import { createHmac, randomBytes } from 'node:crypto';
import type { Logger } from '@mds/logging';
import { createHttpApp, createMetricsRegistry, listen, listenOps } from '@mds/service-kit';
import type { SimulatorConfig } from './config.js';
import type { WorldDeps } from './domain/types.js';
import { SqliteStore } from './persistence/sqlite-store.js';
import { createSimulator, type Simulator } from './simulator.js';

const TOKEN_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';

/** The real clock, crypto randomness and HMAC-SHA256. */
export function systemDeps(): WorldDeps {
  return {
    now: () => Date.now(),
    randomString: (length) => {
      const bytes = randomBytes(length);
      let out = '';
      for (const byte of bytes) out += TOKEN_ALPHABET[byte & 63];
      return out;
    },
    sign: (key, message) => createHmac('sha256', key).update(message).digest('hex'),
  };
}

export interface SimulatorServer {
  port: number;
  /** `PUBLIC_URL`, or `http://<host>:<port>` of this server. */
  url: string;
  simulator: Simulator;
  /** Ends long polls and held calls, then closes the HTTP server. */
  close(): Promise<void>;
}

export interface StartOptions {
  config: SimulatorConfig;
  logger: Logger;
  /** Defaults to the system clock and crypto randomness. */
  deps?: WorldDeps;
  /** False until start-up finished and again once shutdown began (for /readyz). */
  isReady?: () => boolean;
}

/** The simulator on HTTP: ops endpoints from the service kit, then the bot APIs, control and inbox. */
export async function startSimulatorServer(o: StartOptions): Promise<SimulatorServer> {
  const registry = createMetricsRegistry('messenger-simulator');
  let url = o.config.PUBLIC_URL?.replace(/\/$/, '') ?? '';
  const store = o.config.STATE_FILE === undefined ? undefined : SqliteStore.open(o.config.STATE_FILE);
  let simulator: Simulator;
  let server: Awaited<ReturnType<typeof listen>>;
  let opsServer: Awaited<ReturnType<typeof listen>> | undefined;
  let stopping = false;
  try {
    simulator = createSimulator({
      config: o.config,
      logger: o.logger,
      registry,
      deps: o.deps ?? systemDeps(),
      publicUrl: () => url,
      store,
    });
    const ops = {
      logger: o.logger,
      registry,
      readiness: [],
      isReady: () => !stopping && (o.isReady?.() ?? true),
    };
    const app = createHttpApp({ ...ops, separateOps: o.config.OPS_PORT !== undefined });
    simulator.mount(app);
    if (o.config.OPS_PORT !== undefined)
      opsServer = await listenOps(ops, o.config.HTTP_HOST, o.config.OPS_PORT);
    server = await listen(app, o.config.HTTP_HOST, o.config.HTTP_PORT);
  } catch (error) {
    store?.close();
    throw error;
  }
  if (!url) {
    const host =
      o.config.HTTP_HOST === '0.0.0.0' || o.config.HTTP_HOST === '::' ? '127.0.0.1' : o.config.HTTP_HOST;
    url = `http://${host.includes(':') ? `[${host}]` : host}:${server.port}`;
  }
  return {
    port: server.port,
    url,
    simulator,
    close: async () => {
      stopping = true;
      await simulator.stop();
      await server.close();
      await opsServer?.close();
    },
  };
}
