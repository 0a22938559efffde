// The port the sender calls a messenger through: @mds/messengers' provider (one per messenger of the catalogue).
export {
  PollError,
  clientPerToken,
  type BotCredentials,
  type MessengerProvider,
  type OutgoingMessage,
  type PollFailure,
  type UpdatesPage,
} from '@mds/messengers';
