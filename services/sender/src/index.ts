export { senderEnv, requireWebhookSettings, type SenderConfig } from './config.js';
export { journalMigrations } from './adapters/journal/journal.js';
export { startSender, type SenderOptions } from './sender.js';
export { senderDeployment } from './deployment.js';
export {
  PollError,
  clientPerToken,
  type BotCredentials,
  type MessengerProvider,
  type OutgoingMessage,
  type PollFailure,
  type UpdatesPage,
} from './application/provider.js';
export type { AttemptResult, Unreachable } from './domain/attempt.js';
export { noAnswer } from './domain/no-answer.js';
export { redactSecrets, scrubError, ScrubbedError, REDACTED } from './domain/scrub.js';
export type { BotFact } from './domain/bot-facts.js';
export { inRows, type LinkButton } from './domain/buttons.js';
export type { BotDirectory, BotSummary } from './application/ports.js';
