export {
  senderEnv,
  requireWebhookSettings,
  configSchema,
  withMessengerDefaults,
  senderSchemaName,
  deployStepConfigSchema,
  type Settings,
  type SenderConfig,
} from './config.js';
export { journalMigrations } from './adapters/journal/journal.js';
export { startSender, type SenderOptions } from './sender.js';
export { startMessengerSender } from './app.js';
export { senderDeployment } from './deployment.js';
export type { BotDirectory, BotSummary } from './application/ports.js';
