import { z } from 'zod';
import { FALLBACK_ERROR_CODES, messageErrorCodes, phoneChangeErrorCodes } from './error-codes.js';
import { Messenger, type FallbackRoute } from './gen/mds/events/v1/common.js';
import type { ClientRequestEvent } from './gen/mds/events/v1/client_request.js';
import type { MessageEvent } from './gen/mds/events/v1/message.js';
import { BUILT_IN_MESSENGERS, messengerNameOf, type BuiltInMessengerName } from './messengers.js';
import type { Complete } from './streams.js';

// What a company's webhook receives: the body of each notification and the Standard Webhooks headers of each
// attempt. The webhook-dispatcher builds its bodies as these types, and the gateway's OpenAPI document describes
// its `webhooks` from these schemas, so the two cannot drift apart.

const isoTimestamp = z.iso.datetime({ offset: false, precision: 3 }).meta({
  description: 'When the outcome happened: ISO 8601 in UTC with milliseconds.',
  examples: ['2026-11-21T13:25:28.123Z'],
});

const subjectId = z.uuid().meta({
  description: 'The `event_id` of the 202 answer this notification is about.',
  examples: ['0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10'],
});

const metadataEcho = z
  .record(z.string(), z.string())
  .optional()
  .meta({
    description:
      'The `metadata` of the request, as it was sent. Present only when the request carried metadata (so a request without it gets exactly the body it got before); `{}` once the person was forgotten.',
    examples: [{ order_id: '42', campaign: 'autumn' }],
  });

/** The messengers the examples name: a message's own, and the fallback that decided it. */
const [OWN, FALLBACK = OWN] = BUILT_IN_MESSENGERS.map((m) => m.name) as [
  BuiltInMessengerName,
  ...BuiltInMessengerName[],
];

const serviceName = z.enum([...BUILT_IN_MESSENGERS.map((m) => m.name), 'unknown']);
const channelBotName = z
  .string()
  .optional()
  .meta({
    description:
      "The bot's name (the company's default bot's when the request named none); omitted when there was no bot.",
    examples: ['shop_bot'],
  });

/** What a message with a `fallback` tells besides: the channel that decided it and those tried before it. */
const fallbackEcho = {
  service: serviceName.optional().meta({
    description:
      'Only for a message sent with a `fallback`: the messenger of the channel that decided it (its own or one of its fallback).',
    examples: [FALLBACK],
  }),
  bot_name: channelBotName,
  attempts: z
    .array(
      z.strictObject({
        service: serviceName,
        bot_name: channelBotName,
        error_code: z.string().meta({
          description: `Why the person could not be reached there: one of ${[...FALLBACK_ERROR_CODES].map((c) => `\`${c}\``).join(', ')}.`,
          examples: ['CLIENT_NOT_LINKED_TO_BOT'],
        }),
      }),
    )
    .optional()
    .meta({
      description:
        'Only for a message sent with a `fallback`: each channel tried before the one that decided it, in order (`[]` when its own channel decided it).',
    }),
};

const codeList = (codes: Record<string, string>) =>
  Object.entries(codes)
    .map(([code, meaning]) => `- \`${code}\`: ${meaning}`)
    .join('\n');

const failure = (codes: Record<string, string>, example: string) => ({
  error_code: z.string().meta({
    description: `Stable; new codes may be added:\n${codeList(codes)}`,
    examples: [example],
  }),
  error_description: z.string().meta({ description: 'What happened, for people.' }),
});

export const messageStatusNotificationSchema = z
  .discriminatedUnion('state', [
    z
      .strictObject({
        type: z.literal('message.status'),
        event_id: subjectId,
        timestamp: isoTimestamp,
        state: z.literal('sent').meta({ description: 'The messenger accepted the message for the client.' }),
        ...fallbackEcho,
        metadata: metadataEcho,
      })
      .meta({ title: 'sent' }),
    z
      .strictObject({
        type: z.literal('message.status'),
        event_id: subjectId,
        timestamp: isoTimestamp,
        state: z.literal('failed').meta({ description: 'The message cannot be delivered.' }),
        ...failure(messageErrorCodes, 'CLIENT_NOT_LINKED_TO_BOT'),
        ...fallbackEcho,
        metadata: metadataEcho,
      })
      .meta({ title: 'failed' }),
  ])
  .meta({
    id: 'MessageStatusNotification',
    description:
      "The outcome of a message (`POST /api/v1/send`): the spec's fields (section 2.4) beside `type`; `error_code` and `error_description` only when `failed`; `service`, `bot_name` and `attempts` only for a message sent with a `fallback`.",
    examples: [
      {
        type: 'message.status',
        event_id: '0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10',
        timestamp: '2026-11-21T13:25:28.123Z',
        state: 'sent',
      },
      {
        type: 'message.status',
        event_id: '0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10',
        timestamp: '2026-11-21T13:25:28.123Z',
        state: 'failed',
        error_code: 'CLIENT_NOT_LINKED_TO_BOT',
        error_description: messageErrorCodes.CLIENT_NOT_LINKED_TO_BOT,
      },
      {
        type: 'message.status',
        event_id: '0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10',
        timestamp: '2026-11-21T13:25:28.123Z',
        state: 'sent',
        metadata: { order_id: 'A-1042', campaign: 'autumn' },
      },
      {
        type: 'message.status',
        event_id: '0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10',
        timestamp: '2026-11-21T13:25:28.123Z',
        state: 'sent',
        service: FALLBACK,
        bot_name: 'shop_other_bot',
        attempts: [{ service: OWN, bot_name: 'shop_bot', error_code: 'CLIENT_NOT_LINKED_TO_BOT' }],
      },
    ],
  });

export const clientCheckNotificationSchema = z
  .strictObject({
    type: z.literal('client.check'),
    event_id: subjectId,
    timestamp: isoTimestamp,
    phone_number: z
      .string()
      .meta({ description: 'The number checked, 11 digits.', examples: ['79123456789'] }),
    exists: z.boolean().meta({ description: 'Whether a client of the company has this number.' }),
    bots: z
      .array(
        z.strictObject({
          service: z.enum([...BUILT_IN_MESSENGERS.map((m) => m.name), 'unknown']),
          bot_name: z.string(),
          reachable: z.boolean().meta({ description: 'False once the client blocked or stopped the bot.' }),
        }),
      )
      .meta({ description: "The company's bots the client started and shared their contact with." }),
    metadata: metadataEcho,
  })
  .meta({
    id: 'ClientCheckNotification',
    description: 'The answer to a `POST /api/v1/client/check`.',
    examples: [
      {
        type: 'client.check',
        event_id: '5b1f7e0c-2d4a-4c8e-8f3b-6a9d0e1c2b34',
        timestamp: '2026-11-21T13:25:28.123Z',
        phone_number: '79123456789',
        exists: true,
        bots: [{ service: BUILT_IN_MESSENGERS[0]!.name, bot_name: 'shop_bot', reachable: true }],
      },
    ],
  });

export const phoneChangedNotificationSchema = z
  .discriminatedUnion('state', [
    z
      .strictObject({
        type: z.literal('client.phone_changed'),
        event_id: subjectId,
        timestamp: isoTimestamp,
        state: z.literal('changed'),
        old_phone: z.string().meta({ examples: ['79123456789'] }),
        new_phone: z.string().meta({ examples: ['79876543210'] }),
        links_moved: z
          .number()
          .int()
          .min(0)
          .meta({ description: 'How many bot links moved to the new number.' }),
        metadata: metadataEcho,
      })
      .meta({ title: 'changed' }),
    z
      .strictObject({
        type: z.literal('client.phone_changed'),
        event_id: subjectId,
        timestamp: isoTimestamp,
        state: z.literal('failed'),
        ...failure(phoneChangeErrorCodes, 'OLD_PHONE_NOT_FOUND'),
        metadata: metadataEcho,
      })
      .meta({ title: 'failed' }),
  ])
  .meta({
    id: 'PhoneChangedNotification',
    description: 'The outcome of a `POST /api/v1/change_phone`: the links moved, or why not.',
    examples: [
      {
        type: 'client.phone_changed',
        event_id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
        timestamp: '2026-11-21T13:25:28.123Z',
        state: 'changed',
        old_phone: '79123456789',
        new_phone: '79876543210',
        links_moved: 2,
      },
    ],
  });

export type MessageStatusNotification = z.infer<typeof messageStatusNotificationSchema>;
export type ClientCheckNotification = z.infer<typeof clientCheckNotificationSchema>;
export type PhoneChangedNotification = z.infer<typeof phoneChangedNotificationSchema>;
/** Every body a company's webhook receives; `type` tells which. */
export type WebhookNotification =
  MessageStatusNotification | ClientCheckNotification | PhoneChangedNotification;
export type WebhookNotificationType = WebhookNotification['type'];

/** ISO 8601 in UTC with milliseconds, e.g. "2026-11-21T13:25:28.123Z". */
const iso = (at: Date | undefined, fallback: Date | undefined) =>
  (at ?? fallback ?? new Date(0)).toISOString();

/**
 * The body a company's webhook receives for an outcome event, or undefined for events nobody is told
 * about (MessageAccepted, the *Requested events). Every body starts with `type`, then `event_id` and
 * `timestamp`; `message.status` carries exactly the spec's fields (section 2.4) beside `type`. `metadata`,
 * the request's (from its own event), is echoed last, and only when the request carried some.
 */
export function webhookBodyOf(
  record: Complete<MessageEvent> | Complete<ClientRequestEvent>,
  metadata?: Record<string, string>,
): WebhookNotification | undefined {
  const body = outcomeBodyOf(record);
  return body && metadata && Object.keys(metadata).length > 0 ? { ...body, metadata } : body;
}

function outcomeBodyOf(
  record: Complete<MessageEvent> | Complete<ClientRequestEvent>,
): WebhookNotification | undefined {
  const { metadata, event } = record;
  const head = <T extends WebhookNotificationType>(type: T, at: Date | undefined) => ({
    type,
    event_id: metadata.streamId,
    timestamp: iso(at, metadata.occurredAt),
  });
  switch (event.$case) {
    case 'messageSent':
      return {
        ...head('message.status', event.value.sentAt),
        state: 'sent',
        ...channelsOf(event.value.fallback),
      };
    case 'messageDeliveryFailed':
      return {
        ...head('message.status', event.value.failedAt),
        state: 'failed',
        error_code: event.value.errorCode,
        error_description: event.value.errorDescription,
        ...channelsOf(event.value.fallback),
      };
    case 'clientChecked':
      return {
        ...head('client.check', undefined),
        phone_number: event.value.phoneNumber,
        exists: event.value.exists,
        bots: event.value.bots.map((b) => ({
          service: (messengerNameOf(b.messenger) ?? 'unknown') as BuiltInMessengerName | 'unknown',
          bot_name: b.botName,
          reachable: b.reachable,
        })),
      };
    case 'phoneChanged':
      return {
        ...head('client.phone_changed', undefined),
        state: 'changed',
        old_phone: event.value.oldPhone,
        new_phone: event.value.newPhone,
        links_moved: event.value.linksMoved,
      };
    case 'phoneChangeRejected':
      return {
        ...head('client.phone_changed', undefined),
        state: 'failed',
        error_code: event.value.errorCode,
        error_description: event.value.errorDescription,
      };
    default:
      return undefined;
  }
}

type ChannelEcho = { service: z.infer<typeof serviceName>; bot_name?: string };

/** A channel as the API names it: its `service`, and its `bot_name` unless none (the default bot). */
export const channelEcho = (messenger: Messenger, botName: string): ChannelEcho => ({
  service: (messengerNameOf(messenger) ?? 'unknown') as ChannelEcho['service'],
  ...(botName ? { bot_name: botName } : {}),
});

/**
 * The `service`, `bot_name` and `attempts` of an outcome of a message with a fallback (its `fallback` set: the
 * channel that decided it and those tried before); nothing for any other, whose body stays as it was.
 */
export function channelsOf(route: FallbackRoute | undefined): {
  service?: ChannelEcho['service'];
  bot_name?: string;
  attempts?: (ChannelEcho & { error_code: string })[];
} {
  if (!route) return {};
  return {
    ...channelEcho(route.current?.messenger ?? Messenger.MESSENGER_UNSPECIFIED, route.current?.botName ?? ''),
    attempts: route.tried.map((a) => ({ ...channelEcho(a.messenger, a.botName), error_code: a.errorCode })),
  };
}

/** The Standard Webhooks headers of every attempt (https://www.standardwebhooks.com, v1.0.0). */
export const webhookHeadersSchema = z.object({
  'webhook-id': z
    .string()
    .regex(/^msg_[0-9a-f]{32}$/)
    .meta({
      description:
        "The notification's id: the same on every retry of it, so use it to drop duplicates (delivery is at least once).",
      examples: ['msg_2b7f0c1e9d8a4f6b8c3e5a7d9f1b3c5e'],
    }),
  'webhook-timestamp': z
    .string()
    .regex(/^\d{10}$/)
    .meta({
      description:
        'Unix seconds of this attempt (each retry has its own). Refuse one more than 5 minutes from your clock.',
      examples: ['1763731528'],
    }),
  'webhook-signature': z
    .string()
    .regex(/^v1,[A-Za-z0-9+/]+=*( v1,[A-Za-z0-9+/]+=*)*$/)
    .meta({
      description:
        "Space-separated `v1,<base64 HMAC-SHA256>` of `{webhook-id}.{webhook-timestamp}.{raw body}`, one for each of your endpoint's `whsec_` secrets (two while one is being rotated out). Accept the request when any of them matches.",
      examples: ['v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE='],
    }),
});
