import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { topics, type Complete, type MessageEvent, deliveryTopic, messengerNamed } from '@mds/contracts';
import { createEventPublisher, createKafkaClient, type EventPublisher } from '@mds/kafka';
import { collectEvents } from '@mds/kafka/testing';
import { freePort } from '@mds/local-infra';
import { eventually } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import { deliveryRequest } from '@mds/sender/testing';
import { senderService, simulatorAndRegistry, Stack } from './harness.js';

// telegram-sender as a real process, killed with SIGKILL while it sends a steady stream of messages
// (each provider call slowed down, so calls are in flight at the kill). Afterwards: every message has
// exactly one outcome, nothing is lost, and nobody got a message twice.
const ADMIN = 'e2e-admin-token-0123456789';
const MESSAGES = 450;
const PEOPLE = 30;
const logger = createLogger({ service: 'sender-crash-e2e', level: 'silent' });
let stack: Stack;
let publisher: EventPublisher;
let outcomes: { events: Complete<MessageEvent>[]; stop: () => Promise<void> };

beforeAll(async () => {
  const grpcPort = await freePort();
  stack = await Stack.start({
    env: { INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url') },
    services: [
      ...simulatorAndRegistry({ grpcPort, adminToken: ADMIN }),
      senderService(messengerNamed('telegram')!, (ports) => ({
        REGISTRY_GRPC_ADDRESS: `127.0.0.1:${grpcPort}`,
        MESSENGER_API_BASE: `http://127.0.0.1:${ports['messenger-simulator']}`,
        SEND_TIMEOUT_MS: '2000',
        UPDATES_POLL_TIMEOUT_S: '1',
      })),
    ],
  });
  const brokers = stack.infra.kafkaBrokers.split(',');
  publisher = createEventPublisher({
    kafka: createKafkaClient({ brokers, clientId: 'sender-crash-e2e' }, logger),
    logger,
    topicPrefix: stack.topicPrefix,
  });
  await publisher.connect();
  outcomes = await collectEvents({ brokers, topic: topics.message, topicPrefix: stack.topicPrefix });
});

afterAll(async () => {
  await outcomes?.stop();
  await publisher?.disconnect();
  await stack?.stop();
});

async function call<T>(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

it('a sender killed under load loses nothing and sends nothing twice', { timeout: 240_000 }, async () => {
  const sim = stack.service('messenger-simulator').url;
  const registry = stack.service('client-registry').url;
  const sender = stack.service('telegram-sender');
  const { company_id: companyId } = await call<{ company_id: string }>(
    registry,
    'POST',
    '/admin/v1/companies',
    { name: 'Crash' },
    ADMIN,
  );
  const simBot = await call<{ id: number; token: string }>(sim, 'POST', '/control/bots', {
    messenger: 'telegram',
    username: `crash_${randomBytes(3).toString('hex')}_bot`,
  });
  const { bot_id: botId } = await call<{ bot_id: string }>(
    registry,
    'POST',
    `/admin/v1/companies/${companyId}/bots`,
    { messenger: 'telegram', name: 'crash', token: simBot.token },
    ADMIN,
  );
  const people = await Promise.all(
    Array.from({ length: PEOPLE }, async (_, i) => {
      const p = await call<{ id: number; telegram_user_id: number }>(sim, 'POST', '/control/people', {
        phone_number: `7916${String(5_000_000 + i).padStart(7, '0')}`,
        first_name: `P${i}`,
      });
      await call(sim, 'POST', `/control/people/${p.id}/actions`, { action: 'start', bot_id: simBot.id });
      return p;
    }),
  );
  // Every call takes 300 ms: with 30 calls a second, about nine are in flight at any moment.
  await call(sim, 'POST', '/control/faults', {
    kind: 'latency',
    bot_id: simBot.id,
    method: 'sendMessage',
    ms: 300,
    count: 100_000,
  });

  const records = Array.from({ length: MESSAGES }, (_, i) => {
    const person = people[i % PEOPLE]!;
    const chatId = String(person.telegram_user_id);
    return deliveryRequest(
      companyId,
      { messenger: 1, botId, chatId, userId: chatId },
      { text: `crash test #${i}`, deadlineMs: 600_000 },
    );
  });
  const ids = records.map((r) => r.metadata.streamId);
  await publisher.publish(
    records.map((record) => ({ topic: deliveryTopic('telegram'), key: botId, record })),
  );

  const decided = () =>
    new Set(outcomes.events.filter((e) => ids.includes(e.metadata.streamId)).map((e) => e.metadata.streamId));
  await eventually(
    'a third of the messages decided',
    () => (decided().size >= MESSAGES / 3 ? true : undefined),
    60_000,
  );
  await sender.kill('SIGKILL');
  const atKill = decided().size;
  await sender.start();
  await eventually('every message decided', () => (decided().size === MESSAGES ? true : undefined), 120_000);

  const byMessage = new Map<string, Set<string>>();
  let records_ = 0;
  for (const e of outcomes.events) {
    if (!ids.includes(e.metadata.streamId)) continue;
    records_++;
    const set = byMessage.get(e.metadata.streamId) ?? new Set<string>();
    set.add(e.metadata.eventId);
    byMessage.set(e.metadata.streamId, set);
  }
  const twoOutcomes = [...byMessage.values()].filter((s) => s.size > 1).length;
  const lost = ids.filter((id) => !byMessage.has(id)).length;
  const unconfirmed = outcomes.events.filter(
    (e) =>
      ids.includes(e.metadata.streamId) &&
      e.event.$case === 'messageDeliveryFailed' &&
      e.event.value.errorCode === 'DELIVERY_UNCONFIRMED',
  ).length;
  const received = new Map<string, number>();
  for (const p of people) {
    const inbox = await call<{ messages: { text: string }[] }>(
      sim,
      'GET',
      `/control/people/${p.id}/messages?bot_id=${simBot.id}`,
    );
    for (const m of inbox.messages) received.set(m.text, (received.get(m.text) ?? 0) + 1);
  }
  const duplicates = [...received.values()].filter((n) => n > 1).length;
  const reached = received.size;
  console.log(
    `[sender crash] ${MESSAGES} messages, SIGKILL after ${atKill} decided: lost ${lost}, ` +
      `messages with two outcomes ${twoOutcomes}, outcome records ${records_} (republished with the same event id: ${records_ - byMessage.size}), ` +
      `failed as DELIVERY_UNCONFIRMED ${unconfirmed}, received by people ${reached}, received twice ${duplicates}`,
  );
  expect(lost).toBe(0);
  expect(twoOutcomes).toBe(0);
  expect(duplicates).toBe(0);
  // Unconfirmed ones may or may not have reached the person; every sent one did.
  expect(reached).toBeGreaterThanOrEqual(MESSAGES - unconfirmed);
});
