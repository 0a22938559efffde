import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * Loads the modules MESSENGER_PLUGINS names (comma-separated: package names or absolute paths), in order,
 * before a service reads its configuration: a plugin adds its messenger to the catalogue (registerMessenger,
 * @mds/contracts) and, for the senders, its bot API (registerProvider, @mds/messengers) when it is imported.
 * A plugin that cannot be loaded stops the service with exit 1, naming it: a service without a messenger the
 * others know would refuse its messages.
 */
export async function loadMessengerPlugins(
  service: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  const plugins = (env.MESSENGER_PLUGINS ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  for (const plugin of plugins) {
    try {
      await import(isAbsolute(plugin) ? pathToFileURL(plugin).href : plugin);
    } catch (error) {
      console.error(`${service}: MESSENGER_PLUGINS: ${plugin} cannot be loaded: ${(error as Error).message}`);
      process.exit(1);
    }
  }
  return plugins;
}
