import { format, resolveConfig } from 'prettier';
import { configurationFile, renderConfiguration } from './configuration.js';

/** The reference as it is committed: rendered, then formatted by the repository's Prettier settings. */
export async function formattedConfiguration(): Promise<string> {
  const options = (await resolveConfig(configurationFile)) ?? {};
  return format(await renderConfiguration(), { ...options, filepath: configurationFile });
}
