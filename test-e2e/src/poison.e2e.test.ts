import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  newEvent,
  topics,
  type BotUpdateEvent,
  type ClientEvent,
  type ClientRequestEvent,
  type DeliveryEvent,
  type MessageEvent,
  type StreamRecord,
  type WebhookEvent,
  type TopicSpec,
  deliveryTopic,
} from '@mds/contracts';
import { createKafkaClient, topicName, type Kafka } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';
import {
  startDeliveryStack,
  type DemoCompany,
  type Sandbox,
  type SimulatedBot,
  type SimulatedPerson,
  type WebhookReceiver,
} from './sandbox.js';

// Records no handler can store, produced straight to the topics (the gateway refuses such input at its door;
// a producer's bug, an older release or a forged record need not): a NUL in a number or a text, an event id
// that is no UUID. Each consumer group of every service sets them aside in its service's dead_letters and goes
// on; another company's messages, requests and people go on flowing through it. The whole stack, as processes.

const SECRET_TEXT = 'poison-secret-text';
const SECRET_PHONE = '79990001122';
const NOT_A_UUID = 'not-a-uuid';
/**
 * Where a forged record holds NUL bytes: our codecs write U+FFFD in place of a NUL (whatever a producer let
 * through), so the record is encoded with this and its bytes are then replaced with NULs, as an older release
 * or a foreign producer would have written them.
 */
const NUL = '{NUL}';
const NUL_BYTES = Buffer.from(NUL);
const WAIT_MS = 90_000;

let stack: Stack;
let sandbox: Sandbox;
let kafka: Kafka;
let db: pg.Pool;
let hostile: DemoCompany & { webhooks: WebhookReceiver };
let other: DemoCompany & { webhooks: WebhookReceiver };
let telegramBot: SimulatedBot;
let maxBot: SimulatedBot;
let telegramPerson: SimulatedPerson;
let maxPerson: SimulatedPerson;

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack());
  kafka = createKafkaClient(
    { brokers: stack.infra.kafkaBrokers.split(','), clientId: 'poison-test' },
    createLogger({ service: 'poison-test', level: 'silent' }),
  );
  db = new pg.Pool({ connectionString: stack.databaseUrl, max: 2 });
  hostile = await sandbox.companyWithWebhooks('Hostile');
  other = await sandbox.companyWithWebhooks('Other');
  telegramBot = await sandbox.bot(other.companyId, 'telegram', 'other-telegram');
  maxBot = await sandbox.bot(other.companyId, 'max', 'other-max');
  telegramPerson = await sandbox.linkedPerson(other.companyId, telegramBot);
  maxPerson = await sandbox.linkedPerson(other.companyId, maxBot);
}, 240_000);

afterAll(async () => {
  await db?.end();
  await sandbox?.close();
  await stack?.stop();
});

const envelope = (companyId: string, streamId: string) => ({
  eventId: NOT_A_UUID,
  occurredAt: new Date(),
  companyId,
  streamId,
  producer: 'forger',
});

function withNulBytes(bytes: Buffer): Buffer {
  for (let at = bytes.indexOf(NUL_BYTES); at >= 0; at = bytes.indexOf(NUL_BYTES, at))
    bytes.fill(0, at, at + NUL.length);
  return bytes;
}

/** Produces the record as it is, past every check of ours; answers where it landed. */
async function forge<R extends StreamRecord>(
  spec: TopicSpec<R>,
  key: string,
  record: R,
): Promise<{ topic: string; partition: number; offset: string }> {
  const producer = kafka.producer();
  await producer.connect();
  try {
    const topic = topicName(spec, stack.topicPrefix);
    const [written] = await producer.send({
      topic,
      acks: -1,
      messages: [{ key, value: withNulBytes(Buffer.from(spec.codec.encode(record))) }],
    });
    return { topic, partition: written!.partition, offset: written!.baseOffset! };
  } finally {
    await producer.disconnect();
  }
}

/** The group (without the stack's prefix) has committed past the record: its partition went on. */
async function movedPast(group: string, at: { topic: string; partition: number; offset: string }) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await eventually(
      `${group} past ${at.topic}/${at.partition}@${at.offset}`,
      async () => {
        const [offsets] = await admin.fetchOffsets({
          groupId: `${stack.topicPrefix}${group}`,
          topics: [at.topic],
        });
        const committed = offsets?.partitions.find((p) => p.partition === at.partition)?.offset ?? '-1';
        return BigInt(committed) > BigInt(at.offset);
      },
      WAIT_MS,
    );
  } finally {
    await admin.disconnect();
  }
}

/** The row the group set aside, in its service's dead_letters: the record's place, no personal data in why. */
async function setAsideBy(
  schema: string,
  group: string,
  at: { topic: string; partition: number; offset: string },
) {
  const row = await eventually(
    `${group}'s dead letter`,
    async () =>
      (
        await db.query<{ reason: string; payload: Buffer }>(
          `select reason, payload from ${schema}.dead_letters
            where source = $1 and topic = $2 and kafka_partition = $3 and kafka_offset = $4`,
          [`consumer:${stack.topicPrefix}${group}`, at.topic, at.partition, at.offset],
        )
      ).rows[0],
    WAIT_MS,
  );
  expect(row.reason).toMatch(/^refused: /);
  expect(row.reason).not.toContain(SECRET_TEXT);
  expect(row.reason).not.toContain(SECRET_PHONE);
  return row;
}

/** A message of the other company, sent and decided, its webhook received, and on its dashboard. */
async function otherCompanySends(person: SimulatedPerson, service: 'telegram' | 'max') {
  const eventId = await sandbox.send(other.apiKey, {
    phone_number: person.phone,
    service,
    text: 'still flowing',
  });
  const state = await sandbox.finishedState(other.apiKey, eventId, WAIT_MS);
  expect(state.state).toBe('sent');
  await other.webhooks.waitFor(eventId, WAIT_MS);
  await eventually(
    'the message on the dashboard',
    async () =>
      (await db.query('select 1 from dashboard.messages where message_id = $1', [eventId])).rowCount === 1,
    WAIT_MS,
  );
  return eventId;
}

describe('a record no handler can store', () => {
  it('on mds.message.v1 and mds.webhook.v1 is set aside by client-registry.routing, gateway.event-states, webhook-dispatcher and dashboard.read-models; the other company goes on', async () => {
    const accepted = await forge(
      topics.message,
      randomUUID(),
      newEvent<MessageEvent>({
        ...envelope(hostile.companyId, randomUUID()),
        event: {
          $case: 'messageAccepted',
          value: {
            phoneNumber: `${SECRET_PHONE}${NUL}`,
            text: `${SECRET_TEXT} ${NUL}`,
            messenger: 1,
            botName: '',
            buttons: [],
            apiKeyId: 'k',
            idempotencyKey: '',
          },
        },
      }),
    );
    const failed = await forge(
      topics.message,
      randomUUID(),
      newEvent<MessageEvent>({
        ...envelope(hostile.companyId, randomUUID()),
        event: {
          $case: 'messageDeliveryFailed',
          value: {
            errorCode: 'PROVIDER_ERROR',
            errorDescription: `boom${NUL} ${SECRET_TEXT}`,
            failedAt: new Date(),
            attempts: 1,
            botId: '',
          },
        },
      }),
    );
    // What came of the incident: an endpoint answered "boom\0", and the dashboard could not store the attempt.
    const webhookId = `msg_${'0'.repeat(32)}`;
    const attempted = await forge(
      topics.webhook,
      webhookId,
      newEvent<WebhookEvent>({
        ...envelope(hostile.companyId, webhookId),
        eventId: randomUUID(),
        event: {
          $case: 'webhookAttempted',
          value: {
            kind: 'message.status',
            subjectId: randomUUID(),
            attempt: 1,
            url: 'https://hooks.example/x',
            statusCode: 500,
            latencyMs: 3,
            outcome: 2,
            // An older release's event: the answer in its excerpt (no longer read) and in its error.
            error: `HTTP 500: boom${NUL} ${SECRET_TEXT}`,
            responseExcerpt: `boom${NUL} ${SECRET_TEXT}`,
          },
        },
      } as never),
    );
    await otherCompanySends(telegramPerson, 'telegram');
    // Routing looks the number up (a NUL in it: 22021); the read model of states keeps the failure's
    // description (22P05 in jsonb), the dispatcher looks its event id up (22P02).
    await setAsideBy('client_registry', 'client-registry.routing', accepted);
    await setAsideBy('gateway', 'gateway.event-states', failed);
    await setAsideBy('webhook_dispatcher', 'webhook-dispatcher', failed);
    await setAsideBy('dashboard', 'dashboard.read-models', attempted);
    await movedPast('dashboard.read-models', attempted);
    for (const group of [
      'gateway.event-states',
      'client-registry.routing',
      'webhook-dispatcher',
      'dashboard.read-models',
    ]) {
      await movedPast(group, accepted);
      await movedPast(group, failed);
    }
  });

  it('on mds.client-request.v1 is set aside by client-registry.links (and the read models); the other company checks a client', async () => {
    const at = await forge(
      topics.clientRequest,
      randomUUID(),
      newEvent<ClientRequestEvent>({
        ...envelope(hostile.companyId, randomUUID()),
        event: {
          $case: 'clientCheckRequested',
          value: { phoneNumber: `${SECRET_PHONE}${NUL}`, apiKeyId: 'k', idempotencyKey: '' },
        },
      }),
    );
    const answer = await sandbox.call<{ event_id: string }>(other.apiKey, '/client/check', {
      phone_number: telegramPerson.phone,
    });
    expect(answer.status).toBe(202);
    expect((await sandbox.finishedState(other.apiKey, answer.body.event_id, WAIT_MS)).state).toBe('checked');
    await setAsideBy('client_registry', 'client-registry.links', at);
    await setAsideBy('gateway', 'gateway.event-states', at);
    for (const group of [
      'client-registry.links',
      'gateway.event-states',
      'webhook-dispatcher',
      'dashboard.read-models',
    ])
      await movedPast(group, at);
  });

  it('on mds.bot-update.v1 is set aside by client-registry.links; the other company links a new person', async () => {
    const at = await forge(
      topics.botUpdate,
      telegramBot.botId,
      newEvent<BotUpdateEvent>({
        ...envelope(hostile.companyId, telegramBot.botId),
        event: {
          $case: 'contactShared',
          value: {
            chat: { messenger: 1, botId: telegramBot.botId, chatId: '1', userId: '1' },
            providerUpdateId: '1',
            phoneNumber: `${SECRET_PHONE}${NUL}`,
          },
        },
      } as never),
    );
    await sandbox.linkedPerson(other.companyId, telegramBot);
    await setAsideBy('client_registry', 'client-registry.links', at);
    for (const group of ['client-registry.links', 'dashboard.read-models']) await movedPast(group, at);
  });

  it.each([
    ['telegram-sender', 'telegram'],
    ['max-sender', 'max'],
  ] as const)(
    'on its delivery topic does not stop %s; the other company sends through it',
    async (group, service) => {
      const spec = deliveryTopic(service);
      const bot = service === 'telegram' ? telegramBot : maxBot;
      const at = await forge(
        spec,
        bot.botId,
        newEvent<DeliveryEvent>({
          ...envelope(hostile.companyId, bot.botId),
          event: {
            $case: 'deliveryRequested',
            value: {
              messageId: NOT_A_UUID,
              chat: { messenger: service === 'telegram' ? 1 : 2, botId: bot.botId, chatId: '1', userId: '1' },
              botName: '',
              text: `${SECRET_TEXT}${NUL}`,
              buttons: [],
              acceptedAt: new Date(),
              deliverBefore: new Date(Date.now() + 60_000),
            },
          },
        } as never),
      );
      await otherCompanySends(service === 'telegram' ? telegramPerson : maxPerson, service);
      // Refused by its journal (the message id is no UUID: 22P02), by the consumer or by the bot's lane.
      await setAsideBy(service === 'telegram' ? 'telegram_sender' : 'max_sender', group, at);
      await movedPast(group, at);
      await movedPast('dashboard.read-models', at);
    },
  );

  it('on mds.client.v1 is set aside by the forget groups of the dispatcher and the dashboard; the routing view and the gateway go on', async () => {
    const at = await forge(
      topics.client,
      hostile.companyId,
      newEvent<ClientEvent>({
        ...envelope(hostile.companyId, randomUUID()),
        event: { $case: 'clientForgotten', value: { subjectId: `subject-${NOT_A_UUID}${NUL}` } },
      } as never),
    );
    await setAsideBy('webhook_dispatcher', 'webhook-dispatcher.forget', at);
    await setAsideBy('dashboard', 'dashboard.forget', at);
    for (const group of ['webhook-dispatcher.forget', 'dashboard.forget', 'gateway.forget'])
      await movedPast(group, at);
    // The registry's routing view (a group of each replica's own, committing nothing) read it too.
    await otherCompanySends(telegramPerson, 'telegram');
  });

  it('leaves no number or text of a record set aside in any log line', () => {
    for (const name of [
      'gateway',
      'client-registry',
      'webhook-dispatcher',
      'dashboard',
      'telegram-sender',
      'max-sender',
    ]) {
      for (const replica of stack.replicas(name)) {
        const log = readFileSync(replica.logFile, 'utf8');
        expect(log, `${name}'s log`).not.toContain(SECRET_TEXT);
        expect(log, `${name}'s log`).not.toContain(SECRET_PHONE);
      }
    }
  });
});
