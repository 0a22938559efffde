import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Messenger, topics, type DeliveryEvent } from '@mds/contracts';
import type { Knex } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import type { ConsumedEvent, EventPublisher, OutgoingEvent } from '@mds/kafka';
import { eventually } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import { createDeliveries } from './deliveries.js';
import type { AttemptResult } from './domain/attempt.js';
import { createJournal, journalMigrations, type Journal } from './journal.js';
import { senderMetrics } from './metrics.js';
import type { MessengerProvider } from './provider.js';
import { deliveryRequest } from './test-support/stack.js';

// The delivery mechanism against a real journal, with a provider and a publisher in memory: what happens
// to a bot's queue when its partition is revoked (a rebalance, a crashed consumer) while a call is in flight.
let db: Knex;
let testSchema: TestSchema | undefined;

beforeAll(async () => {
  testSchema = await migratedTestSchema('deliveries_test', journalMigrations);
  db = testSchema.db;
});

afterAll(() => testSchema?.drop());

/** A provider whose first call waits until the test lets it answer; later calls answer at once. */
function gatedProvider() {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const calls: string[] = [];
  const provider = {
    messenger: Messenger.MESSENGER_TELEGRAM,
    producer: 'deliveries-test',
    pollsCountAgainstRate: false,
    webhookSecretHeader: 'x-test',
    async send(_bot, message): Promise<AttemptResult> {
      calls.push(message.text);
      if (calls.length === 1) await gate;
      return { kind: 'sent', providerMessageId: String(calls.length) };
    },
    poll: () => Promise.reject(new Error('not polled here')),
    subscribe: () => Promise.resolve(),
    factsOfPush: () => [],
  } satisfies MessengerProvider;
  return { provider, calls, open: () => open() };
}

function memoryPublisher(): EventPublisher & { published: OutgoingEvent[] } {
  const published: OutgoingEvent[] = [];
  return {
    published,
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    healthy: () => true,
    publish: (events) => (published.push(...events), Promise.resolve()),
  };
}

/** The delivery mechanism for one test: a bot sending as fast as it is asked, one call at a time. */
function deliveriesWith(
  o: Pick<Parameters<typeof createDeliveries>[0], 'provider' | 'journal' | 'publisher'> &
    Partial<Parameters<typeof createDeliveries>[0]>,
) {
  return createDeliveries({
    directory: {
      list: () => Promise.resolve([]),
      credentials: (id) => Promise.resolve({ botId: id, companyId: 'c', name: 'test', token: 't' }),
      forget: () => undefined,
      close: () => undefined,
    },
    logger: createLogger({ service: 'deliveries-test', level: 'silent' }),
    metrics: senderMetrics(new Registry()),
    deliveryTopic: topics.deliveryTelegram,
    botRatePerSecond: 1_000,
    chatRatePerSecond: 0,
    botConcurrency: 1,
    sendTimeoutMs: 60_000,
    retry: { baseMs: 10, maxMs: 100 },
    windowPerBot: 10,
    ...o,
  });
}

/** A routed delivery of one message to `botId`, as the sender's consumer hands it over. */
function consumedDelivery(botId: string, i: number): ConsumedEvent<DeliveryEvent> {
  const record = deliveryRequest(
    'c',
    { messenger: 1, botId, chatId: String(100 + i), userId: String(100 + i) },
    { text: `message ${i}` },
  );
  return {
    topic: 'deliveries',
    spec: topics.deliveryTelegram,
    partition: 0,
    offset: String(i),
    key: botId,
    record,
  };
}

const outcomesOf = (publisher: ReturnType<typeof memoryPublisher>) =>
  publisher.published.filter((e) => e.topic === topics.message).map((e) => e.record.event.$case);

it('a partition revoked and given back during a call leaves no message behind and sends none twice', async () => {
  const { provider, calls, open } = gatedProvider();
  const publisher = memoryPublisher();
  const botId = `bot-${randomUUID()}`;
  const deliveries = deliveriesWith({
    provider,
    journal: createJournal(db, `test/${randomUUID()}`),
    publisher,
    // A window of one: the bot's other messages wait in the journal, so its lane refills as it goes.
    windowPerBot: 1,
  });
  const consumed = Array.from({ length: 4 }, (_, i) => consumedDelivery(botId, i));

  deliveries.assign([0]);
  await deliveries.store(consumed);
  await eventually('the first call in flight', () => (calls.length === 1 ? true : undefined));
  // A rebalance: everything revoked, then the same partition given back while the call still runs.
  deliveries.assign([]);
  deliveries.assign([0]);
  await new Promise((r) => setTimeout(r, 200));
  open();

  const ids = consumed.map((e) => e.record.metadata.streamId);
  const decided = () =>
    new Set(
      publisher.published
        .filter((e) => e.topic === topics.message)
        .map((e) => e.record.metadata.streamId)
        .filter((id) => ids.includes(id)),
    );
  await eventually('every message decided', () => (decided().size === ids.length ? true : undefined), 30_000);
  await deliveries.stop();
  const outcomes = publisher.published.filter((e) => e.topic === topics.message);
  expect(outcomes.map((e) => e.record.event.$case)).toEqual(Array(4).fill('messageSent'));
  expect([...calls].sort()).toEqual(['message 0', 'message 1', 'message 2', 'message 3']);
});

it('a message another replica claimed for a moment during a rebalance, then gave back, is still sent', async () => {
  const calls: string[] = [];
  const provider = gatedProvider().provider;
  const sending: MessengerProvider = {
    ...provider,
    send: (_bot, message) => (
      calls.push(message.text),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  const publisher = memoryPublisher();
  const ours = createJournal(db, `test/${randomUUID()}`);
  const theirs = createJournal(db, `test/${randomUUID()}`);
  // The other replica claims the message between this one's read of it and its own claim.
  let lost: string | undefined;
  let taken = false;
  const journal: Journal = {
    ...ours,
    claim: async (messageId) => {
      if (taken) return ours.claim(messageId);
      taken = true;
      await theirs.claim(messageId);
      const claimed = await ours.claim(messageId);
      lost = messageId;
      return claimed;
    },
  };
  // A short send timeout: a claim lost elsewhere has surely ended 10.5 s after it was taken.
  const deliveries = deliveriesWith({ provider: sending, journal, publisher, sendTimeoutMs: 500 });
  deliveries.assign([0]);
  await deliveries.store([consumedDelivery(`bot-${randomUUID()}`, 0)]);
  await eventually('the claim lost to the other replica', () => lost);
  expect(calls).toEqual([]);

  // The other replica's call fails, and it gives the message back for a retry.
  expect(await theirs.release({ messageId: lost!, notBefore: new Date(), failed: true })).toBe(true);
  await eventually('the message sent', () => (calls.length > 0 ? true : undefined), 30_000);
  await eventually('its outcome published', () => (outcomesOf(publisher).length > 0 ? true : undefined));
  await deliveries.stop();
  expect(calls).toEqual(['message 0']);
  expect(outcomesOf(publisher)).toEqual(['messageSent']);
});

it('a message another replica stored after this one read the partition is still sent', async () => {
  const calls: string[] = [];
  const sending: MessengerProvider = {
    ...gatedProvider().provider,
    send: (_bot, message) => (
      calls.push(message.text),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  const publisher = memoryPublisher();
  const ours = deliveriesWith({
    provider: sending,
    journal: createJournal(db, `test/${randomUUID()}`),
    publisher,
  });
  // The replica that owned the partition until a moment ago: it stores its last batch but sends nothing.
  const theirs = deliveriesWith({
    provider: sending,
    journal: createJournal(db, `test/${randomUUID()}`),
    publisher: memoryPublisher(),
  });
  const delivery = consumedDelivery(`bot-${randomUUID()}`, 0);
  ours.assign([0]);
  await new Promise((r) => setTimeout(r, 200)); // its read of the partition's open work: nothing yet
  await theirs.store([delivery]);
  await ours.store([delivery]);
  await eventually(
    'its outcome published',
    () => (outcomesOf(publisher).length > 0 ? true : undefined),
    10_000,
  );
  await Promise.all([ours.stop(), theirs.stop()]);
  expect(calls).toEqual(['message 0']);
  expect(outcomesOf(publisher)).toEqual(['messageSent']);
});
