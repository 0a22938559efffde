// First: tracing (when OTEL_* variables ask for it) must be set up before what it instruments is loaded.
import '@mds/telemetry/start';
import { redact } from '@mds/config';
import { loadConfigOrExit, runService } from '@mds/service-kit';
import { startGateway } from './app.js';
import { configSchema } from './config.js';

const config = loadConfigOrExit('gateway', configSchema);
await runService(
  { name: 'gateway', logLevel: config.LOG_LEVEL, shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS },
  async (context) => {
    context.logger.info({ config: redact(configSchema, config) }, 'configuration');
    const { port, opsPort } = await startGateway(config, context);
    context.logger.info({ port, opsPort }, 'gateway listening');
  },
);
