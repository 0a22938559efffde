import { messengerNamed, type BuiltInMessengerName } from '@mds/contracts';
import { maxProvider } from './max/provider.js';
import type { ProviderFactory } from './provider.js';
import { telegramProvider } from './telegram/provider.js';

/** The bot API of every built-in messenger of the catalogue: a missing one does not compile. */
export const providers = {
  telegram: telegramProvider,
  max: maxProvider,
} as const satisfies Record<BuiltInMessengerName, ProviderFactory>;

const registered = new Map<string, ProviderFactory>(Object.entries(providers));

/**
 * Adds the bot API of a messenger registered in the catalogue (registerMessenger, @mds/contracts): a plugin,
 * or a test's fake messenger. Call it before any service starts.
 */
export function registerProvider(name: string, factory: ProviderFactory): void {
  if (!messengerNamed(name))
    throw new Error(`no messenger ${JSON.stringify(name)} in the catalogue: registerMessenger it first`);
  if (registered.has(name)) throw new Error(`messenger ${name} has a provider already`);
  registered.set(name, factory);
}

/** The bot API of a messenger of the catalogue; undefined when none is registered in this process. */
export function providerOf(name: string): ProviderFactory | undefined {
  return registered.get(name);
}

/** The bot API of a messenger of the catalogue; throws naming what is registered when there is none. */
export function requireProvider(name: string): ProviderFactory {
  const factory = registered.get(name);
  if (!factory)
    throw new Error(
      `no provider for messenger ${JSON.stringify(name)} (providers: ${[...registered.keys()].join(', ')})`,
    );
  return factory;
}
