import { topics, deliveryTopic } from '@mds/contracts';
import { startSender, type BotDirectory } from '@mds/sender';
import type { ServiceContext } from '@mds/service-kit';
import type { Config } from './config.js';
import { telegramProvider } from './adapters/telegram-provider.js';

export const SCHEMA = 'telegram_sender';

export function startTelegramSender(
  config: Config,
  context: ServiceContext,
  options: { directory?: BotDirectory; schema?: string } = {},
): Promise<{ httpPort: number }> {
  return startSender(config, context, {
    provider: telegramProvider({
      apiRoot: config.TELEGRAM_API_ROOT,
      pollTimeoutS: config.UPDATES_POLL_TIMEOUT_S,
    }),
    deliveryTopic: deliveryTopic('telegram'),
    schema: options.schema ?? SCHEMA,
    ...(options.directory ? { directory: options.directory } : {}),
  });
}
