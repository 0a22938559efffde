import { AccountEvent } from './gen/mds/events/v1/account.js';
import { ApiRequestEvent } from './gen/mds/events/v1/api_request.js';
import { BotUpdateEvent } from './gen/mds/events/v1/bot_update.js';
import { ClientEvent } from './gen/mds/events/v1/client.js';
import { ClientRequestEvent } from './gen/mds/events/v1/client_request.js';
import { DeliveryEvent } from './gen/mds/events/v1/delivery.js';
import { MessageEvent } from './gen/mds/events/v1/message.js';
import { WebhookEvent } from './gen/mds/events/v1/webhook.js';
import { BUILT_IN_MESSENGERS, messengerNamed, messengers } from './messengers.js';
import { streamCodec, type StreamCodec, type StreamRecord } from './streams.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * How long a topic keeps its events.
 * - `forever`: the topic is the source of truth of a service's state (accounts, client links);
 *   deleting any event would make the state unrebuildable.
 * - `history`: per-request facts kept for replay and analysis for `MDS_HISTORY_RETENTION_DAYS`
 *   (default 365); the projections keep the derived state beyond that.
 * - `{ days }`: operational records kept that many days whatever MDS_HISTORY_RETENTION_DAYS says (the API
 *   request log: its projection keeps the same days, so nothing is replayable that the pages no longer show).
 */
export type Retention = 'forever' | 'history' | { readonly days: number };

/** Days the API request log is kept: on its topic and in the dashboard's table of it. */
export const API_REQUEST_LOG_DAYS = 30;

export interface TopicSpec<R extends StreamRecord = StreamRecord> {
  /** Base name; tests prefix it so each test has its own topics. */
  readonly name: string;
  readonly partitions: number;
  readonly retention: Retention;
  /** What the record key is; all events of one aggregate share it, which keeps them in order. */
  readonly keyedBy: string;
  /** The service that writes each event type (one owner per fact). */
  readonly owners: Readonly<Record<string, string>>;
  /** The services that consume the topic (their Kafka users get Read on it, and nothing else does). */
  readonly readers: readonly string[];
  readonly codec: StreamCodec<R>;
}

function topic<R extends StreamRecord>(spec: TopicSpec<R>): TopicSpec<R> {
  return spec;
}

/** The sender deployments of the built-in messengers, as the topics' owners name them. */
const SENDERS = BUILT_IN_MESSENGERS.map((m) => m.sender).join(', ');

export const topics = {
  message: topic({
    name: 'mds.message.v1',
    partitions: 12,
    retention: 'history',
    keyedBy: 'message id (public event_id)',
    owners: {
      MessageAccepted: 'gateway',
      MessageSent: SENDERS,
      MessageDeliveryFailed: `${SENDERS} (a message of theirs); client-registry (one for a messenger this build does not know)`,
      MessageCancelRequested: 'gateway',
      MessageAttemptFailed: `${SENDERS} (a channel of a message with a fallback)`,
    },
    readers: ['gateway', 'client-registry', 'webhook-dispatcher', 'dashboard'],
    codec: streamCodec('mds.events.v1.MessageEvent', MessageEvent),
  }),
  clientRequest: topic({
    name: 'mds.client-request.v1',
    partitions: 6,
    retention: 'history',
    keyedBy: 'request id (public event_id)',
    owners: {
      PhoneChangeRequested: 'gateway',
      ClientCheckRequested: 'gateway',
      PhoneChanged: 'client-registry',
      PhoneChangeRejected: 'client-registry',
      ClientChecked: 'client-registry',
    },
    readers: ['gateway', 'client-registry', 'webhook-dispatcher', 'dashboard'],
    codec: streamCodec('mds.events.v1.ClientRequestEvent', ClientRequestEvent),
  }),
  botUpdate: topic({
    name: 'mds.bot-update.v1',
    partitions: 6,
    retention: 'history',
    keyedBy: 'bot_id',
    owners: {
      PersonStartedBot: SENDERS,
      ContactShared: SENDERS,
      PersonBlockedBot: SENDERS,
      PersonUnblockedBot: SENDERS,
    },
    readers: ['client-registry', 'dashboard'],
    codec: streamCodec('mds.events.v1.BotUpdateEvent', BotUpdateEvent),
  }),
  client: topic({
    name: 'mds.client.v1',
    partitions: 6,
    retention: 'forever',
    keyedBy: 'company_id',
    owners: {
      ClientLinked: 'client-registry',
      ClientUnlinked: 'client-registry',
      ClientLinkReachabilityChanged: 'client-registry',
      ClientPhoneChanged: 'client-registry',
      ClientForgotten: 'client-registry',
    },
    readers: ['client-registry', 'gateway', 'webhook-dispatcher', 'dashboard'],
    codec: streamCodec('mds.events.v1.ClientEvent', ClientEvent),
  }),
  account: topic({
    name: 'mds.account.v1',
    partitions: 3,
    retention: 'forever',
    keyedBy: 'company_id',
    owners: { '*': 'client-registry' },
    readers: ['client-registry', 'webhook-dispatcher', 'gateway'],
    codec: streamCodec('mds.events.v1.AccountEvent', AccountEvent),
  }),
  webhook: topic({
    name: 'mds.webhook.v1',
    partitions: 12,
    retention: 'history',
    keyedBy: 'webhook_id (the webhook-id header)',
    owners: { '*': 'webhook-dispatcher' },
    readers: ['dashboard'],
    codec: streamCodec('mds.events.v1.WebhookEvent', WebhookEvent),
  }),
  apiRequests: topic({
    name: 'mds.api-requests.v1',
    partitions: 6,
    retention: { days: API_REQUEST_LOG_DAYS },
    keyedBy: 'API key id',
    owners: { ApiRequestServed: 'gateway', ApiRequestsServed: 'gateway' },
    readers: ['dashboard'],
    codec: streamCodec('mds.events.v1.ApiRequestEvent', ApiRequestEvent),
  }),
} as const;

export type TopicKey = keyof typeof topics;

/** retention.ms of a topic: -1 is for ever; historyDays < 0 keeps `history` topics for ever. */
export function retentionMs(retention: Retention, historyDays: number): number {
  if (retention === 'forever') return -1;
  if (retention === 'history') return historyDays < 0 ? -1 : historyDays * DAY_MS;
  return retention.days * DAY_MS;
}

const deliveryTopics = new Map<string, TopicSpec<DeliveryEvent>>();

/** The delivery topic of a messenger of the catalogue: client-registry routes to it, its sender consumes it. */
export function deliveryTopic(messenger: string): TopicSpec<DeliveryEvent> {
  let spec = deliveryTopics.get(messenger);
  if (!spec) {
    const definition = messengerNamed(messenger);
    if (!definition) throw new Error(`no messenger ${JSON.stringify(messenger)} in the catalogue`);
    spec = topic({
      name: definition.deliveryTopic,
      partitions: 12,
      retention: 'history',
      keyedBy: 'bot_id (DeliveryUnroutable, DeliveryCancelRequested: message id)',
      owners: {
        DeliveryRequested: 'client-registry',
        DeliveryUnroutable: 'client-registry',
        DeliveryCancelRequested: 'client-registry',
      },
      readers: [definition.sender, 'dashboard'],
      codec: streamCodec('mds.events.v1.DeliveryEvent', DeliveryEvent),
    });
    deliveryTopics.set(messenger, spec);
  }
  return spec;
}

/** Every topic of the platform: the fixed ones and one delivery topic per messenger of the catalogue. */
export function allTopics(): TopicSpec[] {
  return [...Object.values(topics), ...messengers().map((m) => deliveryTopic(m.name))] as TopicSpec[];
}
