export { RegistryError, registryErrorOf, type RegistryErrorKind } from './errors.js';
export { createRegistryCache, type RegistryCache, type RegistryCacheOptions } from './cache.js';
export {
  createRegistryClient,
  type BotCredentials,
  type BotSummary,
  type Caller,
  type Endpoint,
  type RegistryClient,
  type RegistryClientOptions,
  type RegistryPersonKey,
  type RegistryWebhookEndpoint,
  type Resolution,
} from './client.js';
export {
  createApiKeyResolver,
  registryKeyLookup,
  type ApiKeyResolver,
  type ApiKeyResolverOptions,
  type KeyStanding,
} from './api-keys.js';
export { registryDirectory, type BotDirectory } from './bots.js';
export { registryPersonKeys } from './person-keys.js';
