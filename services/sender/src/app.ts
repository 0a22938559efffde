import type { ServiceContext } from '@mds/service-kit';
import type { PersonKeyPort } from '@mds/personal-data';
import type { BotDirectory } from './application/ports.js';
import { senderMessenger, withMessengerDefaults, type Settings } from './config.js';
import { startSender } from './sender.js';

/**
 * The sender of the messenger MESSENGER names: its catalogue entry gives the topic, the consumer group, the
 * events' producer and the schema (telegram-sender, telegram_sender as before), its provider the bot API.
 */
export function startMessengerSender(
  settings: Settings,
  context: ServiceContext,
  options: { directory?: BotDirectory; personKeys?: PersonKeyPort; schema?: string } = {},
): Promise<{ httpPort: number }> {
  const { definition, factory } = senderMessenger(settings.MESSENGER);
  const config = withMessengerDefaults(settings, factory);
  const provider = factory.create({
    definition,
    apiBase: config.MESSENGER_API_BASE,
    pollTimeoutS: config.UPDATES_POLL_TIMEOUT_S,
  });
  return startSender(config, context, { definition, provider, ...options });
}
