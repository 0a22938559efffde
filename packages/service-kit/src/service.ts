import { loadMessengerPlugins } from './messenger-plugins.js';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { ConfigError, loadConfig, redact, type z } from '@mds/config';
import { onUncleanText } from '@mds/text';
import { createLogger, type Logger } from '@mds/logging';
import { shutdownTelemetry } from '@mds/telemetry';
import { Lifecycle } from './lifecycle.js';

/** V8's heap in use just after the process's last full (mark-compact) collection, once there was one. */
let heapAfterMajorGc: number | undefined;
let majorGcObserver: PerformanceObserver | undefined;

function watchMajorGc(): void {
  if (majorGcObserver) return;
  majorGcObserver = new PerformanceObserver((list) => {
    const major = list
      .getEntries()
      .some(
        (e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR,
      );
    if (major) heapAfterMajorGc = getHeapStatistics().used_heap_size;
  });
  majorGcObserver.observe({ entryTypes: ['gc'] });
}

export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  watchMajorGc();
  new Gauge({
    name: 'mds_heap_after_major_gc_bytes',
    help: "V8's heap in use just after the last full collection: what is live (heap used also counts garbage not yet collected). A leak shows as this growing.",
    registers: [registry],
    collect() {
      if (heapAfterMajorGc !== undefined) this.set(heapAfterMajorGc);
    },
  });
  return registry;
}

export interface ServiceContext {
  logger: Logger;
  lifecycle: Lifecycle;
}

export interface RunServiceOptions {
  name: string;
  logLevel?: string;
  shutdownTimeoutMs?: number;
}

/**
 * Runs a service's start function and owns the process from then on: SIGTERM or SIGINT stops what was
 * started in reverse order and exits 0; a failure to start, or an uncaught error, is logged and exits 1.
 */
export async function runService(
  o: RunServiceOptions,
  start: (context: ServiceContext) => Promise<void>,
): Promise<void> {
  const logger = createLogger({ service: o.name, level: o.logLevel ?? process.env.LOG_LEVEL ?? 'info' });
  const lifecycle = new Lifecycle(logger, o.shutdownTimeoutMs ?? 25_000);
  // Stopped last: the spans of the shutdown itself are exported too.
  lifecycle.onStop('telemetry', shutdownTelemetry);
  // The event codecs clean what a producer let through; each one is a bug to fix (the field named, not its value).
  onUncleanText(({ messageType, field }) =>
    logger.error(
      { messageType, field },
      'an event field held characters no text may hold (a producer did not clean outside input); written with U+FFFD',
    ),
  );

  const shutdown = async (reason: string, code: number) => {
    if (lifecycle.isStopping) return;
    logger.info({ reason }, 'shutting down');
    await lifecycle.stop();
    logger.info('stopped');
    logger.flush();
    process.exit(code);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM', 0));
  process.once('SIGINT', () => void shutdown('SIGINT', 0));
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    void shutdown('uncaughtException', 1);
  });
  process.on('unhandledRejection', (error) => {
    logger.fatal({ err: error }, 'unhandled rejection');
    void shutdown('unhandledRejection', 1);
  });

  try {
    await start({ logger, lifecycle });
    logger.info('started');
  } catch (error) {
    logger.fatal({ err: error }, 'failed to start');
    await lifecycle.stop();
    logger.flush();
    process.exit(1);
  }
}

/**
 * The service's configuration, or a clear list of what is wrong with the environment and exit 1: a
 * misconfigured pod should say why in one line per variable, not with a stack trace.
 */
export function loadConfigOrExit<S extends z.ZodObject>(
  service: string,
  schema: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<S> {
  try {
    return loadConfig(schema, env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(`${service}: ${error.message}`);
    process.exit(1);
  }
}

/**
 * A service's main (src/main.ts): its configuration or exit 1 naming what is wrong, the configuration logged
 * without its secrets, then `start` run by runService (LOG_LEVEL, SHUTDOWN_TIMEOUT_MS); what `start` returns
 * (its ports, its address) is logged as "<name> listening" or `listeningMessage`.
 */
export async function serviceMain<S extends z.ZodObject>(o: {
  name: string;
  configSchema: S;
  start: (config: z.infer<S>, context: ServiceContext) => Promise<object>;
  listeningMessage?: string;
}): Promise<void> {
  await loadMessengerPlugins(o.name);
  const config = loadConfigOrExit(o.name, o.configSchema);
  const { LOG_LEVEL, SHUTDOWN_TIMEOUT_MS } = config as { LOG_LEVEL?: string; SHUTDOWN_TIMEOUT_MS?: number };
  await runService(
    { name: o.name, logLevel: LOG_LEVEL, shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS },
    async (context) => {
      context.logger.info({ config: redact(o.configSchema, config) }, 'configuration');
      const listening = await o.start(config, context);
      context.logger.info(listening, o.listeningMessage ?? `${o.name} listening`);
    },
  );
}
