// First: tracing (when OTEL_* variables ask for it) must be set up before what it instruments is loaded.
import '@mds/telemetry/start';
import { redact } from '@mds/config';
import { loadConfigOrExit, runService } from '@mds/service-kit';
import { startDashboard } from './app.js';
import { configSchema } from './config.js';

const config = loadConfigOrExit('dashboard', configSchema);
await runService(
  { name: 'dashboard', logLevel: config.LOG_LEVEL, shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS },
  async (context) => {
    context.logger.info({ config: redact(configSchema, config) }, 'configuration');
    const { httpPort } = await startDashboard(config, context);
    context.logger.info({ httpPort }, 'dashboard listening');
  },
);
