// The messenger simulator: Telegram Bot API and MAX Bot API look-alikes, a control API and a web inbox.
// First: tracing (when OTEL_* variables ask for it) must be set up before what it instruments is loaded.
import '@mds/telemetry/start';
import { serviceMain } from '@mds/service-kit';
import { simulatorSchema } from './config.js';
import { startSimulatorServer } from './server.js';

await serviceMain({
  name: 'messenger-simulator',
  configSchema: simulatorSchema,
  listeningMessage: 'serving the Telegram and MAX bot APIs, control API and inbox',
  start: async (config, { logger, lifecycle }) => {
    let started = false;
    const server = await startSimulatorServer({
      config,
      logger,
      isReady: () => started && !lifecycle.isStopping,
    });
    lifecycle.onStop('http', () => server.close());
    started = true;
    return { url: server.url };
  },
});
