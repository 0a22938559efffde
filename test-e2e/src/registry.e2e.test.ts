import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  newEvent,
  topics,
  type BotUpdateEvent,
  type ClientChecked,
  type Complete,
  type StreamRecord,
  type TopicSpec,
  deliveryTopic,
} from '@mds/contracts';
import { createEventPublisher, createKafkaClient, type EventPublisher } from '@mds/kafka';
import { collectEvents } from '@mds/kafka/testing';
import { eventually } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import { freePort } from '@mds/local-infra';
import { openRecords, registryPersonKeys } from '@mds/personal-data';
import { simulatorAndRegistry, Stack } from './harness.js';
import { deliveryServices } from './sandbox.js';

// client-registry, the gateway, the telegram sender and the messenger simulator as real processes: accounts
// through the admin API, people's bot updates as the senders publish them, requests through the public API.
const ADMIN = 'e2e-admin-token-0123456789';
const logger = createLogger({ service: 'registry-e2e', level: 'silent' });
let stack: Stack;
let publisher: EventPublisher;
const stops: (() => Promise<void>)[] = [];

let personKeys: ReturnType<typeof registryPersonKeys>;

beforeAll(async () => {
  const grpcPort = await freePort();
  const token = randomBytes(24).toString('base64url');
  personKeys = registryPersonKeys({ address: `127.0.0.1:${grpcPort}`, token });
  stack = await Stack.start({
    env: { INTERNAL_GRPC_TOKEN: token },
    services: [
      ...simulatorAndRegistry({ grpcPort, adminToken: ADMIN }),
      // Where a message with no route is failed (its one outcome is decided in the sender's journal).
      deliveryServices({ grpcPort, adminToken: ADMIN }).find((s) => s.name === 'telegram-sender')!,
      {
        name: 'gateway',
        env: { REGISTRY_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`, API_KEY_CACHE_TTL_MS: '1000' },
      },
    ],
  });
  publisher = createEventPublisher({
    kafka: createKafkaClient(
      { brokers: stack.infra.kafkaBrokers.split(','), clientId: 'registry-e2e' },
      logger,
    ),
    logger,
    topicPrefix: stack.topicPrefix,
  });
  await publisher.connect();
});

afterAll(async () => {
  for (const stop of stops) await stop();
  await publisher?.disconnect();
  personKeys?.close();
  await stack?.stop();
});

async function collect<R extends StreamRecord>(topic: TopicSpec<R>): Promise<Complete<R>[]> {
  const collector = await collectEvents({
    brokers: stack.infra.kafkaBrokers.split(','),
    topic,
    topicPrefix: stack.topicPrefix,
  });
  stops.push(collector.stop);
  return collector.events;
}

const json = async <T>(response: Response) => (await response.json()) as T;

async function admin<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${stack.service('client-registry').url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return json<T>(response);
}

function api(apiKey: string, path: string, body: unknown) {
  return fetch(`${stack.service('gateway').url}/api/v1${path}`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

describe('accounts, links and routing across real processes', () => {
  it('a client linked through a bot is found, routed to, moved to a new number, and survives a registry crash', async () => {
    const [outcomes, deliveries, messages] = await Promise.all([
      collect(topics.clientRequest),
      collect(deliveryTopic('telegram')),
      collect(topics.message),
    ]);
    const company = await admin<{ company_id: string }>('POST', '/companies', { name: 'E2E' });
    const companyId = company.company_id;
    const { api_key: apiKey } = await admin<{ api_key: string }>('POST', `/companies/${companyId}/api-keys`, {
      label: 'e2e',
      scopes: ['send', 'check', 'change_phone', 'read'],
    });
    const bot = await json<{ token: string }>(
      await fetch(`${stack.service('messenger-simulator').url}/control/bots`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messenger: 'telegram', username: 'e2e_shop_bot' }),
      }),
    );
    const { bot_id: botId } = await admin<{ bot_id: string }>('POST', `/companies/${companyId}/bots`, {
      messenger: 'telegram',
      name: 'shop',
      token: bot.token,
    });

    const check = async (phone: string) => {
      const response = await api(apiKey, '/client/check', { phone_number: phone });
      expect(response.status).toBe(202);
      const { event_id } = await json<{ event_id: string }>(response);
      const checked = await eventually('ClientChecked', () =>
        outcomes.find((e) => e.metadata.streamId === event_id && e.event.$case === 'clientChecked'),
      );
      // The number travels sealed under the person's key (docs/personal-data.md): opened as a consumer does.
      const [opened] = await openRecords(personKeys, [checked]);
      const { sealed, ...value } = opened!.event.value as ClientChecked;
      expect(sealed?.subjectId).toBeTruthy();
      return value;
    };
    expect(await check('79123456789')).toMatchObject({ exists: false, bots: [] });

    // What telegram-sender publishes when the person shares their own contact with the bot.
    const chat = { messenger: 1 as const, botId, chatId: '424242', userId: '424242' };
    const shared = newEvent<BotUpdateEvent>({
      eventId: randomUUID(),
      occurredAt: new Date(),
      companyId,
      streamId: botId,
      producer: 'e2e',
      event: { $case: 'contactShared', value: { chat, providerUpdateId: '1', phoneNumber: '79123456789' } },
    });
    await publisher.publish([{ topic: topics.botUpdate, key: botId, record: shared }]);
    // The link is made asynchronously: ask until it shows (bounded).
    let found = await check('79123456789');
    for (let i = 0; i < 20 && !found.exists; i++) found = await check('79123456789');
    expect(found).toEqual({
      phoneNumber: '79123456789',
      exists: true,
      bots: [{ messenger: 1, botName: 'shop', reachable: true }],
    });

    const send = async (phone: string) => {
      const response = await api(apiKey, '/send', {
        phone_number: phone,
        text: 'Your order is ready',
        service: 'telegram',
      });
      expect(response.status).toBe(202);
      return (await json<{ event_id: string }>(response)).event_id;
    };
    const routedTo = async (messageId: string) => {
      const order = await eventually('routing', () =>
        deliveries.find(
          (e) => e.event.$case === 'deliveryRequested' && e.event.value.messageId === messageId,
        ),
      );
      return (order.event.value as { chat?: { chatId: string } }).chat?.chatId;
    };
    const failedWith = async (messageId: string) =>
      (
        (
          await eventually('failure', () =>
            messages.find(
              (e) => e.metadata.streamId === messageId && e.event.$case === 'messageDeliveryFailed',
            ),
          )
        ).event.value as { errorCode: string }
      ).errorCode;

    expect(await routedTo(await send('79123456789'))).toBe('424242');

    const changed = await api(apiKey, '/change_phone', {
      old_phone: '79123456789',
      new_phone: '79876543210',
    });
    const { event_id: changeId } = await json<{ event_id: string }>(changed);
    const outcome = await eventually('PhoneChanged', () =>
      outcomes.find((e) => e.metadata.streamId === changeId && e.event.$case === 'phoneChanged'),
    );
    expect(outcome.event.value).toMatchObject({ linksMoved: 1 });
    expect(await routedTo(await send('79876543210'))).toBe('424242');
    const lost = await send('79123456789');
    expect(await failedWith(lost)).toBe('CLIENT_NOT_FOUND');

    // The same outcomes through the gateway's read API (its read model follows the log).
    const read = (eventId: string) =>
      eventually(`the state of ${eventId}`, async () => {
        const response = await fetch(`${stack.service('gateway').url}/api/v1/events/${eventId}`, {
          headers: { 'x-api-key': apiKey },
        });
        const body = response.status === 200 ? await json<{ state: string }>(response) : undefined;
        return body && body.state !== 'new' ? body : undefined;
      });
    expect(await read(changeId)).toMatchObject({
      kind: 'change_phone',
      state: 'changed',
      result: { old_phone: '79123456789', new_phone: '79876543210', links_moved: 1 },
    });
    expect(await read(lost)).toMatchObject({
      kind: 'message',
      state: 'failed',
      error_code: 'CLIENT_NOT_FOUND',
    });

    await stack.service('client-registry').restart('SIGKILL');
    expect(await routedTo(await send('79876543210'))).toBe('424242');
  });
});
