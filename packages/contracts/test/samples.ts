// One fully populated sample of every event of every stream. The mapped types make the compiler
// demand a sample for each oneof case, so a new event cannot be added without its wire fixture.
import {
  type AccountEvent,
  type ApiRequestEvent,
  type BotUpdateEvent,
  type ClientEvent,
  type ClientRequestEvent,
  type DeliveryEvent,
  type EventCase,
  type EventOf,
  type MessageEvent,
  type StreamRecord,
  type WebhookEvent,
  AttemptOutcome,
  Messenger,
  UnreachableReason,
} from '../src/index.js';

type Samples<R extends StreamRecord> = { [C in EventCase<R>]: EventOf<R, C> };

const at = new Date('2026-11-21T10:00:00.123Z');
const chat = {
  messenger: Messenger.MESSENGER_TELEGRAM,
  botId: 'bot-1',
  chatId: '123456789',
  userId: '123456789',
};
const secret = {
  keyId: 'k1',
  nonce: Buffer.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
  ciphertext: Buffer.from([9, 8, 7]),
  format: 0,
};
const boundSecret = { ...secret, keyId: 'k2', format: 1 };

export const messageSamples: Samples<MessageEvent> = {
  messageAccepted: {
    phoneNumber: '79123456789',
    text: 'Your order is ready',
    messenger: Messenger.MESSENGER_TELEGRAM,
    botName: 'shop_bot',
    buttons: [{ text: 'Track', url: 'https://example.com/t/1' }],
    apiKeyId: 'key-1',
    idempotencyKey: 'order-42',
  },
  messageSent: { botId: 'bot-1', providerMessageId: '987', sentAt: at, attempts: 2 },
  messageDeliveryFailed: {
    errorCode: 'BOT_BLOCKED_BY_USER',
    errorDescription: 'Forbidden: bot was blocked by the user',
    failedAt: at,
    attempts: 1,
    botId: 'bot-1',
  },
  messageCancelRequested: { messenger: Messenger.MESSENGER_TELEGRAM, apiKeyId: 'key-1' },
  messageAttemptFailed: {
    route: {
      channel: 0,
      current: { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop_bot' },
      next: [{ messenger: Messenger.MESSENGER_MAX, botName: '' }],
      tried: [],
    },
    attempt: {
      messenger: Messenger.MESSENGER_TELEGRAM,
      botName: 'shop_bot',
      botId: 'bot-1',
      errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
      errorDescription: 'the client exists but has not started this bot and shared their contact with it',
      failedAt: at,
    },
    acceptedAt: at,
  },
};

export const deliverySamples: Samples<DeliveryEvent> = {
  deliveryRequested: {
    messageId: '0b9e0c4e-4c8e-4d55-9d0e-7a1c2b3d4e5f',
    chat,
    botName: 'shop_bot',
    text: 'Your order is ready',
    buttons: [{ text: 'Track', url: 'https://example.com/t/1' }],
    acceptedAt: at,
    deliverBefore: new Date('2026-11-21T11:00:00.000Z'),
  },
  deliveryUnroutable: {
    messageId: '0b9e0c4e-4c8e-4d55-9d0e-7a1c2b3d4e5f',
    errorCode: 'CLIENT_NOT_FOUND',
    errorDescription: 'No client with this phone number is linked to a bot of the company',
    acceptedAt: at,
  },
  deliveryCancelRequested: { messageId: '0b9e0c4e-4c8e-4d55-9d0e-7a1c2b3d4e5f' },
};

export const clientRequestSamples: Samples<ClientRequestEvent> = {
  phoneChangeRequested: {
    oldPhone: '79123456789',
    newPhone: '79876543210',
    apiKeyId: 'key-1',
    idempotencyKey: 'c-1',
  },
  phoneChanged: { oldPhone: '79123456789', newPhone: '79876543210', linksMoved: 2 },
  phoneChangeRejected: {
    errorCode: 'NEW_PHONE_IN_USE',
    errorDescription: '79876543210 already belongs to a client',
  },
  clientCheckRequested: { phoneNumber: '79123456789', apiKeyId: 'key-1', idempotencyKey: 'k-1' },
  clientChecked: {
    phoneNumber: '79123456789',
    exists: true,
    bots: [{ messenger: Messenger.MESSENGER_MAX, botName: 'max_bot', reachable: true }],
  },
};

export const botUpdateSamples: Samples<BotUpdateEvent> = {
  personStartedBot: { chat, providerUpdateId: '1001' },
  contactShared: { chat, providerUpdateId: '1002', phoneNumber: '79123456789' },
  personBlockedBot: { chat, providerUpdateId: '1003', reason: UnreachableReason.UNREACHABLE_REASON_BLOCKED },
  personUnblockedBot: { chat, providerUpdateId: '1004' },
};

export const clientSamples: Samples<ClientEvent> = {
  clientLinked: { phoneNumber: '79123456789', chat },
  clientUnlinked: { phoneNumber: '79123456789', chat, reason: 'contact verified by another account' },
  clientLinkReachabilityChanged: {
    phoneNumber: '79123456789',
    chat,
    reachable: false,
    reason: UnreachableReason.UNREACHABLE_REASON_STOPPED,
  },
  clientPhoneChanged: { oldPhone: '79123456789', newPhone: '79876543210', requestId: 'req-1' },
  clientForgotten: { subjectId: 'ab'.repeat(16) },
};

export const accountSamples: Samples<AccountEvent> = {
  companyCreated: { name: 'Acme' },
  apiKeyIssued: {
    keyId: 'key-1',
    keyHash: 'ab'.repeat(32),
    keyPrefix: 'mds_live_ab',
    label: 'backend',
    // The stored fixture predates scopes: a key issued then names none (every scope but change_phone).
    scopes: [],
    // The stored fixture predates rolling: a key issued, not rolled from another.
    rolledFrom: '',
  },
  apiKeyRevoked: { keyId: 'key-1' },
  // The stored fixtures of the four webhook events predate endpoint ids: the legacy endpoint's (none).
  webhookEndpointConfigured: {
    url: 'https://acme.example/hooks',
    secretId: 's1',
    secret,
    endpointId: '',
    description: '',
    eventTypes: [],
    rateLimitPerSecond: 0,
  },
  webhookSecretRotated: {
    secretId: 's2',
    secret,
    previousSecretId: 's1',
    previousSecretExpiresAt: at,
    endpointId: '',
  },
  webhookEndpointDisabled: { reason: 'failing for 5 days', endpointId: '', automatic: false },
  webhookEndpointEnabled: { endpointId: '' },
  botRegistered: {
    botId: 'bot-1',
    messenger: Messenger.MESSENGER_TELEGRAM,
    name: 'shop_bot',
    token: secret,
    providerBotId: '5550001',
    username: 'acme_shop_bot',
  },
  botRemoved: { botId: 'bot-1' },
  defaultBotChosen: { messenger: Messenger.MESSENGER_TELEGRAM, botId: 'bot-1' },
  secretsResealed: {
    botTokens: [{ botId: 'bot-1', token: boundSecret }],
    webhookSecrets: [{ secretId: 's2', secret: boundSecret }],
  },
  webhookEndpointRemoved: { endpointId: 'ep_0123456789ABCDEFGHIJkl' },
  apiKeyExpiryScheduled: { keyId: 'key-1', expiresAt: at },
};

export const apiRequestSamples: Samples<ApiRequestEvent> = {
  apiRequestServed: {
    keyId: 'key-1',
    operation: 'send',
    status: 202,
    subjectEventId: '0b9e0c4e-4c8e-4d55-9d0e-7a1c2b3d4e5f',
    requestId: 'req-1',
    durationMs: 12,
    receivedAt: undefined,
  },
  apiRequestsServed: {
    requests: [
      {
        keyId: 'key-1',
        operation: 'read_event',
        status: 404,
        subjectEventId: '0b9e0c4e-4c8e-4d55-9d0e-7a1c2b3d4e5f',
        requestId: 'req-2',
        durationMs: 3,
        receivedAt: at,
      },
    ],
  },
};

export const webhookSamples: Samples<WebhookEvent> = {
  webhookAttempted: {
    kind: 'message.status',
    subjectId: '0b9e0c4e-4c8e-4d55-9d0e-7a1c2b3d4e5f',
    attempt: 3,
    url: 'https://acme.example/hooks',
    statusCode: 503,
    latencyMs: 120,
    outcome: AttemptOutcome.ATTEMPT_OUTCOME_RETRYABLE,
    error: 'HTTP 503',
    responseExcerpt: 'Service Unavailable',
    nextAttemptAt: at,
    // The stored fixtures predate endpoint ids: the legacy endpoint's (none).
    endpointId: '',
  },
  webhookDelivered: { kind: 'message.status', subjectId: 'subject-1', attempts: 4, endpointId: '' },
  webhookDeliveryAbandoned: {
    kind: 'message.status',
    subjectId: 'subject-1',
    attempts: 8,
    lastError: 'HTTP 500',
    endpointId: '',
  },
};

export const metadataSample = {
  eventId: '7d1f7a4e-3b1c-4f0e-8a55-0c1d2e3f4a5b',
  occurredAt: at,
  companyId: 'company-1',
  streamId: 'stream-1',
  correlationId: 'corr-1',
  causationId: 'cause-1',
  producer: 'test',
};
