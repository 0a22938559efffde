// The messenger simulator: Telegram Bot API and MAX Bot API look-alikes, a control API and a web inbox.
// First: tracing (when OTEL_* variables ask for it) must be set up before what it instruments is loaded.
import '@mds/telemetry/start';
import { redact } from '@mds/config';
import { runService } from '@mds/service-kit';
import { loadSimulatorConfig, simulatorSchema } from './config.js';
import { startSimulatorServer } from './server.js';

const config = loadSimulatorConfig();

await runService(
  { name: 'messenger-simulator', logLevel: config.LOG_LEVEL, shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS },
  async ({ logger, lifecycle }) => {
    logger.info({ config: redact(simulatorSchema, config) }, 'configuration');
    let started = false;
    const server = await startSimulatorServer({
      config,
      logger,
      isReady: () => started && !lifecycle.isStopping,
    });
    lifecycle.onStop('http', () => server.close());
    logger.info({ url: server.url }, 'serving the Telegram and MAX bot APIs, control API and inbox');
    started = true;
  },
);
