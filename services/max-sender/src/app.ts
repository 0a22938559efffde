import { topics, deliveryTopic } from '@mds/contracts';
import { startSender, type BotDirectory } from '@mds/sender';
import type { ServiceContext } from '@mds/service-kit';
import type { Config } from './config.js';
import { maxProvider } from './adapters/max-provider.js';

export const SCHEMA = 'max_sender';

export function startMaxSender(
  config: Config,
  context: ServiceContext,
  options: { directory?: BotDirectory; schema?: string } = {},
): Promise<{ httpPort: number }> {
  return startSender(config, context, {
    provider: maxProvider({ baseUrl: config.MAX_API_BASE, pollTimeoutS: config.UPDATES_POLL_TIMEOUT_S }),
    deliveryTopic: deliveryTopic('max'),
    schema: options.schema ?? SCHEMA,
    ...(options.directory ? { directory: options.directory } : {}),
  });
}
