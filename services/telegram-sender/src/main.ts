import { redact } from '@mds/config';
import { loadConfigOrExit, runService } from '@mds/service-kit';
import { startTelegramSender } from './app.js';
import { configSchema } from './config.js';

const config = loadConfigOrExit('telegram-sender', configSchema);
await runService(
  { name: 'telegram-sender', logLevel: config.LOG_LEVEL, shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS },
  async (context) => {
    context.logger.info({ config: redact(configSchema, config) }, 'configuration');
    const { httpPort } = await startTelegramSender(config, context);
    context.logger.info({ httpPort }, 'telegram-sender listening');
  },
);
