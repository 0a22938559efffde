export {
  MdsClient,
  retryAfterMs,
  type Accepted,
  type CallOptions,
  type ChangePhoneRequest,
  type ClientCheckRequest,
  type EventState,
  type FallbackChannel,
  type LinkButton,
  type MdsClientOptions,
  type Metadata,
  type SendAccepted,
  type SendBatchAccepted,
  type SendBatchItem,
  type SendBatchResult,
  type SendRequest,
} from './client.js';
export {
  MdsApiError,
  MdsNetworkError,
  MdsNotFoundError,
  MdsRateLimitedError,
  MdsUnauthorizedError,
  MdsUnavailableError,
  MdsValidationError,
  type FieldError,
  type Problem,
} from './errors.js';
export {
  MdsWebhookError,
  verifyWebhook,
  type ClientCheckNotification,
  type MessageStatusNotification,
  type PhoneChangedNotification,
  type WebhookNotification,
} from './webhooks.js';
export type { components, paths, webhooks } from './gen/api.js';
