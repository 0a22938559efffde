import { collectDefaultMetrics, Registry } from 'prom-client';
import { ConfigError, loadConfig, type z } from '@mds/config';
import { createLogger, type Logger } from '@mds/logging';
import { Lifecycle } from './lifecycle.js';

export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
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
