export {
  PollError,
  clientPerToken,
  identifyOverHttp,
  type BotCredentials,
  type MessengerProvider,
  type OutgoingMessage,
  type PollFailure,
  type ProviderFactory,
  type ProviderSettings,
  type SenderDefaults,
  type TokenAnswer,
  type UpdatesPage,
} from './provider.js';
export { providers, registerProvider, providerOf, requireProvider } from './providers.js';
export type { AttemptResult, Unreachable } from './attempt-result.js';
export type { BotFact } from './bot-facts.js';
export { inRows, type LinkButton } from './buttons.js';
export { noAnswer } from './no-answer.js';
export { redactSecrets, scrubError, ScrubbedError, REDACTED } from './scrub.js';
