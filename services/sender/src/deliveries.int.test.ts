import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  derivedEventId,
  Messenger,
  newEvent,
  topics,
  type DeliveryEvent,
  type FallbackRoute,
  type MessageAttemptFailed,
  deliveryTopic,
} from '@mds/contracts';
import type { Knex } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import type { ConsumedEvent, EventPublisher, OutgoingEvent } from '@mds/kafka';
import { eventually } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import { createDeliveries } from './application/deliveries.js';
import type { AttemptResult } from './domain/attempt.js';
import { createJournal, journalMigrations } from './adapters/journal/journal.js';
import { senderMetrics } from './adapters/metrics.js';
import type { MessengerProvider } from '@mds/messengers';
import { deliveryRequest } from './test-support/stack.js';
import { memoryPersonKeys, sealRecordWith } from '@mds/personal-data';

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
  const deliveries = createDeliveries({
    personKeys: memoryPersonKeys().port,
    directory: {
      list: () => Promise.resolve([]),
      credentials: (id) => Promise.resolve({ botId: id, companyId: 'c', name: 'test', token: 't' }),
      forget: () => undefined,
      close: () => undefined,
    },
    logger: createLogger({ service: 'deliveries-test', level: 'silent' }),
    metrics: senderMetrics(new Registry()),
    deliveryTopic: deliveryTopic('telegram'),
    botRatePerSecond: 1_000,
    chatRatePerSecond: 0,
    botConcurrency: 1,
    sendTimeoutMs: 60_000,
    retry: { baseMs: 10, maxMs: 100 },
    windowPerBot: 10,
    orphanRecheckMs: 200,
    ...o,
  });
  // The consumer's side of it: offsets held by deferred events, let go of once done.
  const held = new Set<string>();
  return {
    ...deliveries,
    held,
    store: (events: ConsumedEvent<DeliveryEvent>[]) =>
      deliveries.store(events, {
        defer: (e) => {
          held.add(e.offset);
          return () => held.delete(e.offset);
        },
      }),
  };
}

/** A journal whose claims are abandoned once `abandonAfterSeconds` pass (by the database's clock). */
const journalOf = (abandonAfterSeconds = 3_600) =>
  createJournal(db, `test/${randomUUID()}`, abandonAfterSeconds);

/** A routed delivery of one message to `botId`, as the sender's consumer hands it over. */
function consumedDelivery(
  botId: string,
  i: number,
  redelivery = false,
  o: { sendInMs?: number } = {},
): ConsumedEvent<DeliveryEvent> {
  const record = deliveryRequest(
    'c',
    { messenger: 1, botId, chatId: String(100 + i), userId: String(100 + i) },
    { text: `message ${i}`, ...o },
  );
  return {
    topic: 'deliveries',
    spec: deliveryTopic('telegram'),
    partition: 0,
    offset: String(i),
    key: botId,
    record,
    redelivery,
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
    journal: journalOf(),
    publisher,
    // A window of one: the bot's other messages wait in the journal, so its lane refills as it goes.
    windowPerBot: 1,
  });
  const consumed = Array.from({ length: 4 }, (_, i) => consumedDelivery(botId, i));

  deliveries.assign([0]);
  await deliveries.store(consumed);
  await eventually('the first call in flight', () => (calls.length === 1 ? true : undefined));
  // A rebalance: everything revoked, then the same partition given back while the call still runs; the
  // messages whose offsets were held come again from the log.
  deliveries.assign([]);
  deliveries.assign([0]);
  await deliveries.store(consumed.map((e) => ({ ...e, redelivery: true })));
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
  expect(new Set(outcomes.map((e) => e.record.event.$case))).toEqual(new Set(['messageSent']));
  expect([...calls].sort()).toEqual(['message 0', 'message 1', 'message 2', 'message 3']);
  // Every offset let go of: decided and published, or parked and decided later.
  expect(deliveries.held.size).toBe(0);
});

it('a message another replica claimed for a moment during a rebalance, then gave back, is still sent', async () => {
  const calls: string[] = [];
  const sending: MessengerProvider = {
    ...gatedProvider().provider,
    send: (_bot, message) => (
      calls.push(message.text),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  const publisher = memoryPublisher();
  const theirs = journalOf();
  const delivery = consumedDelivery(`bot-${randomUUID()}`, 0);
  const d = deliveryOf(delivery);
  // The other replica claimed it before this one got to it.
  expect(await theirs.claimNew(d)).toBe(1);
  const deliveries = deliveriesWith({ provider: sending, journal: journalOf(), publisher });
  deliveries.assign([0]);
  await deliveries.store([delivery]);
  await new Promise((r) => setTimeout(r, 500));
  expect(calls).toEqual([]);

  // The other replica's call fails, and it gives the message back for a retry.
  expect(await theirs.release({ messageId: d.messageId, notBefore: new Date(), failed: true })).toBe(true);
  await eventually('the message sent', () => (calls.length > 0 ? true : undefined), 30_000);
  await eventually('its outcome published', () => (outcomesOf(publisher).length > 0 ? true : undefined));
  await deliveries.stop();
  expect(calls).toEqual(['message 0']);
  expect(outcomesOf(publisher)).toEqual(['messageSent']);
  expect(deliveries.held.size).toBe(0);
});

it("a claimed message read again after the bot's parked ones were taken up leaves none of them behind", async () => {
  const { provider, calls, open } = gatedProvider();
  const publisher = memoryPublisher();
  const botId = `bot-${randomUUID()}`;
  const consumed = Array.from({ length: 4 }, (_, i) => consumedDelivery(botId, i));
  const theirs = journalOf();
  // Left by another replica: messages 1-3 parked, then message 0 claimed (its row's seq after theirs).
  await theirs.park(consumed.slice(1).map(deliveryOf));
  expect(await theirs.claimNew(deliveryOf(consumed[0]!))).toBe(1);
  const deliveries = deliveriesWith({ provider, journal: journalOf(), publisher, windowPerBot: 1 });

  // This replica takes the partition: its open work is read (message 1 first), and message 1's call waits.
  deliveries.assign([0]);
  await eventually('message 1 in flight', () => (calls.length === 1 ? true : undefined));
  // Message 0's record comes again from the log: a claim of someone else's, watched out of turn.
  await deliveries.store([{ ...consumed[0]!, redelivery: true }]);
  expect(
    await theirs.release({
      messageId: deliveryOf(consumed[0]!).messageId,
      notBefore: new Date(),
      failed: true,
    }),
  ).toBe(true);
  open();

  await eventually('every message sent', () => (calls.length === 4 ? true : undefined), 30_000);
  await eventually('every outcome published', () => (outcomesOf(publisher).length === 4 ? true : undefined));
  await deliveries.stop();
  expect([...calls].sort()).toEqual(['message 0', 'message 1', 'message 2', 'message 3']);
  expect(outcomesOf(publisher)).toEqual(['messageSent', 'messageSent', 'messageSent', 'messageSent']);
});

it('a message another replica parked after this one read the partition is still sent', async () => {
  const calls: string[] = [];
  const sending: MessengerProvider = {
    ...gatedProvider().provider,
    send: (_bot, message) => (
      calls.push(message.text),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  const publisher = memoryPublisher();
  const ours = deliveriesWith({ provider: sending, journal: journalOf(), publisher });
  // The replica that owned the partition until a moment ago: its bot's window is full, so it parks.
  const theirs = deliveriesWith({
    provider: sending,
    journal: journalOf(),
    publisher: memoryPublisher(),
    windowPerBot: 0,
  });
  const delivery = consumedDelivery(`bot-${randomUUID()}`, 0);
  ours.assign([0]);
  theirs.assign([0]);
  await new Promise((r) => setTimeout(r, 200)); // our read of the partition's open work: nothing yet
  await theirs.store([delivery]);
  theirs.assign([]);
  await ours.store([{ ...delivery, redelivery: true }]);
  await eventually(
    'its outcome published',
    () => (outcomesOf(publisher).length > 0 ? true : undefined),
    10_000,
  );
  await Promise.all([ours.stop(), theirs.stop()]);
  expect(calls).toEqual(['message 0']);
  expect(outcomesOf(publisher)).toEqual(['messageSent']);
});

it('reads the bot credentials before claiming: a registry blip delays the message, and it is sent once', async () => {
  const calls: string[] = [];
  const sending: MessengerProvider = {
    ...gatedProvider().provider,
    send: (_bot, message) => (
      calls.push(message.text),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  let lookups = 0;
  const publisher = memoryPublisher();
  const journal = journalOf();
  const deliveries = deliveriesWith({
    provider: sending,
    journal,
    publisher,
    directory: {
      list: () => Promise.resolve([]),
      credentials: (id) =>
        ++lookups === 1
          ? Promise.reject(new Error('14 UNAVAILABLE: No connection established'))
          : Promise.resolve({ botId: id, companyId: 'c', name: 'test', token: 't' }),
      forget: () => undefined,
      close: () => undefined,
    },
  });
  const delivery = consumedDelivery(`bot-${randomUUID()}`, 0);
  deliveries.assign([0]);
  await deliveries.store([delivery]);
  await eventually(
    'its outcome published',
    () => (outcomesOf(publisher).length > 0 ? true : undefined),
    10_000,
  );
  await deliveries.stop();
  expect(outcomesOf(publisher)).toEqual(['messageSent']);
  expect(calls).toEqual(['message 0']);
  const [row] = await journal.rowsOf([deliveryOf(delivery).messageId]);
  expect(row).toMatchObject({ status: 'sent', attempts: 1 });
});

it('a message whose call may have reached the person is failed as unconfirmed, or sent again if told so', async () => {
  for (const unconfirmed of ['fail', 'retry'] as const) {
    let n = 0;
    const provider: MessengerProvider = {
      ...gatedProvider().provider,
      send: () =>
        Promise.resolve(
          ++n === 1
            ? { kind: 'unconfirmed', description: 'the connection was reset after the request' }
            : { kind: 'sent', providerMessageId: '2' },
        ),
    };
    const publisher = memoryPublisher();
    const deliveries = deliveriesWith({ provider, journal: journalOf(), publisher, unconfirmed });
    deliveries.assign([0]);
    await deliveries.store([consumedDelivery(`bot-${randomUUID()}`, 0)]);
    await eventually('its outcome', () => (outcomesOf(publisher).length > 0 ? true : undefined), 10_000);
    await deliveries.stop();
    expect(outcomesOf(publisher)).toEqual([unconfirmed === 'fail' ? 'messageDeliveryFailed' : 'messageSent']);
    expect(n).toBe(unconfirmed === 'fail' ? 1 : 2);
  }
});

/** What the sender reads of a delivery: the fields its journal row is made of. */
function deliveryOf(e: ConsumedEvent<DeliveryEvent>) {
  const v = e.record.event.$case === 'deliveryRequested' ? e.record.event.value : undefined;
  return {
    messageId: v!.messageId,
    botId: v!.chat!.botId,
    partition: e.partition,
    request: Buffer.from(deliveryTopic('telegram').codec.encode(e.record)),
    deliverBefore: v!.deliverBefore!,
  };
}

it('a claim whose answer the database lost is still its own: the message is sent once, not left behind', async () => {
  const calls: string[] = [];
  const provider: MessengerProvider = {
    ...gatedProvider().provider,
    send: (_bot, message) => (
      calls.push(message.text),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  const real = journalOf();
  let lost = 0;
  // The claim is stored, then the connection drops before its answer (a PostgreSQL restart).
  const journal = {
    ...real,
    claimNew: async (d: Parameters<typeof real.claimNew>[0]) => {
      if (lost++ > 0) return real.claimNew(d);
      await real.claimNew(d);
      throw new Error('Connection terminated unexpectedly');
    },
  };
  const publisher = memoryPublisher();
  const deliveries = deliveriesWith({ provider, journal, publisher });
  deliveries.assign([0]);
  await deliveries.store([consumedDelivery(`bot-${randomUUID()}`, 0)]);
  await eventually(
    'its outcome published',
    () => (outcomesOf(publisher).length > 0 ? true : undefined),
    10_000,
  );
  await deliveries.stop();
  expect(calls).toEqual(['message 0']);
  expect(outcomesOf(publisher)).toEqual(['messageSent']);
  expect(deliveries.held.size).toBe(0);
});

/** A decision about the message of `routed` other than its work order, as the sender's consumer hands it over. */
function consumedAbout(
  routed: ConsumedEvent<DeliveryEvent>,
  offset: number,
  event: NonNullable<DeliveryEvent['event']>,
): ConsumedEvent<DeliveryEvent> {
  const messageId = routed.record.metadata.streamId;
  return {
    ...routed,
    offset: String(offset),
    key: messageId,
    record: newEvent<DeliveryEvent>({
      eventId: randomUUID(),
      occurredAt: new Date(),
      companyId: 'c',
      streamId: messageId,
      correlationId: messageId,
      producer: 'sender-test',
      event,
    }),
    redelivery: false,
  };
}

/** The registry's "no route" for the message of `routed`. */
const consumedUnroutable = (routed: ConsumedEvent<DeliveryEvent>, offset: number) =>
  consumedAbout(routed, offset, {
    $case: 'deliveryUnroutable',
    value: {
      messageId: routed.record.metadata.streamId,
      errorCode: 'CLIENT_NOT_FOUND',
      errorDescription: 'no link',
      acceptedAt: new Date(),
    },
  });

/** A cancel (POST /api/v1/cancel) of the message of `routed`, as client-registry passes it on. */
const consumedCancel = (routed: ConsumedEvent<DeliveryEvent>, offset: number) =>
  consumedAbout(routed, offset, {
    $case: 'deliveryCancelRequested',
    value: { messageId: routed.record.metadata.streamId },
  });

it('a message found unroutable, then routed (the registry decided it again after a crash), fails once and is never sent', async () => {
  const { provider, calls } = gatedProvider();
  const publisher = memoryPublisher();
  const deliveries = deliveriesWith({ provider, journal: journalOf(), publisher });
  const routed = consumedDelivery(`bot-${randomUUID()}`, 0);
  deliveries.assign([0]);
  await deliveries.store([consumedUnroutable(routed, 1)]);
  await eventually('the failure published', () => (outcomesOf(publisher).length > 0 ? true : undefined));
  await deliveries.store([{ ...routed, offset: '2' }]);
  await eventually('both offsets let go of', () => (deliveries.held.size === 0 ? true : undefined));
  await deliveries.stop();
  expect(calls).toEqual([]);
  const outcomes = publisher.published.filter((e) => e.topic === topics.message);
  expect(outcomes.map((e) => e.record.event)).toMatchObject([
    { $case: 'messageDeliveryFailed', value: { errorCode: 'CLIENT_NOT_FOUND', attempts: 0 } },
    { $case: 'messageDeliveryFailed', value: { errorCode: 'CLIENT_NOT_FOUND', attempts: 0 } },
  ]);
  // The same event twice (the second a republication): one outcome to every consumer.
  expect(new Set(outcomes.map((e) => e.record.metadata.eventId)).size).toBe(1);
});

// Another decision of a message whose call is claimed: the first outcome is the call's.
it.each([
  ['found unroutable', (routed: ConsumedEvent<DeliveryEvent>) => consumedUnroutable(routed, 1)],
  ['canceled', (routed: ConsumedEvent<DeliveryEvent>) => consumedCancel(routed, 1)],
])(
  'a message routed, then %s during its call, is sent once and its one outcome is the send',
  async (_, late) => {
    const { provider, calls, open } = gatedProvider();
    const publisher = memoryPublisher();
    const deliveries = deliveriesWith({ provider, journal: journalOf(), publisher });
    const routed = consumedDelivery(`bot-${randomUUID()}`, 0);
    deliveries.assign([0]);
    await deliveries.store([routed]);
    await eventually('the call in flight', () => (calls.length === 1 ? true : undefined));
    await deliveries.store([late(routed)]);
    open();
    await eventually('both offsets let go of', () => (deliveries.held.size === 0 ? true : undefined), 30_000);
    await eventually('the send published', () => (outcomesOf(publisher).length > 0 ? true : undefined));
    await deliveries.stop();
    expect(calls).toEqual(['message 0']);
    expect(outcomesOf(publisher)).toEqual(['messageSent']);
  },
);

it("sends a sealed delivery's text opened with the person's key, and fails a forgotten person's as CLIENT_FORGOTTEN", async () => {
  const texts: string[] = [];
  const provider: MessengerProvider = {
    ...gatedProvider().provider,
    send: (_bot, message) => (
      texts.push(`${message.text}|${message.buttons.map((b) => b.url).join(',')}`),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  const keys = memoryPersonKeys();
  const publisher = memoryPublisher();
  const botId = `bot-${randomUUID()}`;
  const deliveries = deliveriesWith({ provider, journal: journalOf(), publisher, personKeys: keys.port });
  const sealedFor = async (i: number, phone: string) => {
    const consumed = consumedDelivery(botId, i);
    const key = await keys.port.obtain('c', phone);
    const value = {
      ...(consumed.record.event.value as object),
      buttons: [{ text: 'b', url: `https://x.test/${i}` }],
    };
    const record = sealRecordWith(
      { ...consumed.record, event: { $case: 'deliveryRequested', value } } as never,
      key,
    );
    return { ...consumed, record } as ConsumedEvent<DeliveryEvent>;
  };
  const kept = await sealedFor(1, '79000000001');
  const forgotten = await sealedFor(2, '79000000002');
  expect((kept.record.event.value as { text: string }).text).toBe('');
  keys.port.forget('c', '79000000002');

  deliveries.assign([0]);
  await deliveries.store([kept, forgotten]);
  const outcome = (i: number) =>
    publisher.published.find(
      (e) =>
        e.topic === topics.message &&
        e.record.metadata.streamId === [kept, forgotten][i]!.record.metadata.streamId,
    );
  await eventually('both decided', () => (outcome(0) && outcome(1) ? true : undefined), 20_000);
  await deliveries.stop();
  expect(texts).toEqual(['message 1|https://x.test/1']);
  expect(outcome(0)!.record.event.$case).toBe('messageSent');
  expect(outcome(1)!.record.event).toMatchObject({
    $case: 'messageDeliveryFailed',
    value: { errorCode: 'CLIENT_FORGOTTEN' },
  });
});

it('an outcome the database could not store is stored by the next turn: the same outcome, no second call', async () => {
  const calls: string[] = [];
  const provider: MessengerProvider = {
    ...gatedProvider().provider,
    send: (_bot, message) => (
      calls.push(message.text),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  const real = journalOf();
  let settles = 0;
  // The first write of the outcome finds the database away, longer than the claim's life.
  const journal = {
    ...real,
    settle: (o: Parameters<typeof real.settle>[0]) =>
      ++settles === 1 ? Promise.reject(new Error('Connection terminated unexpectedly')) : real.settle(o),
  };
  const publisher = memoryPublisher();
  // A claim's life of a few milliseconds: the write is not retried within the turn.
  const deliveries = deliveriesWith({ provider, journal, publisher, sendTimeoutMs: 1, journalRetryMs: 0 });
  const delivery = consumedDelivery(`bot-${randomUUID()}`, 0);
  deliveries.assign([0]);
  await deliveries.store([delivery]);
  await eventually(
    'its outcome published',
    () => (outcomesOf(publisher).length > 0 ? true : undefined),
    10_000,
  );
  await deliveries.stop();
  expect(settles).toBe(2);
  expect(calls).toEqual(['message 0']);
  expect(outcomesOf(publisher)).toEqual(['messageSent']);
  const [row] = await real.rowsOf([deliveryOf(delivery).messageId]);
  expect(row).toMatchObject({ status: 'sent', attempts: 1 });
  expect(deliveries.held.size).toBe(0);
});

it('holds scheduled messages in the journal, sends one at its time, and makes no call for one canceled before', async () => {
  const calls: { text: string; atMs: number }[] = [];
  const provider: MessengerProvider = {
    ...gatedProvider().provider,
    send: (_bot, message) => (
      calls.push({ text: message.text, atMs: Date.now() }),
      Promise.resolve({ kind: 'sent', providerMessageId: '1' })
    ),
  };
  const publisher = memoryPublisher();
  const deliveries = deliveriesWith({ provider, journal: journalOf(), publisher, schedulePollMs: 100 });
  const botId = `bot-${randomUUID()}`;
  const sendAtMs = Date.now() + 2_000;
  const kept = consumedDelivery(botId, 0, false, { sendInMs: 2_000 });
  const canceled = consumedDelivery(botId, 1, false, { sendInMs: 2_000 });
  deliveries.assign([0]);
  await deliveries.store([kept, canceled]);
  // In the journal: no offset held, nothing in memory.
  expect(deliveries.held.size).toBe(0);
  expect(deliveries.queuedCount()).toBe(0);

  await deliveries.store([consumedCancel(canceled, 2)]);
  await eventually('both decided', () => (outcomesOf(publisher).length === 2 ? true : undefined), 30_000);
  await deliveries.stop();
  expect(calls.map((c) => c.text)).toEqual(['message 0']);
  expect(calls[0]!.atMs).toBeGreaterThanOrEqual(sendAtMs);
  expect(calls[0]!.atMs - sendAtMs).toBeLessThan(1_000);
  const failed = publisher.published.find(
    (e) => e.record.metadata.streamId === canceled.record.metadata.streamId,
  );
  expect(failed?.record.event).toMatchObject({
    $case: 'messageDeliveryFailed',
    value: { errorCode: 'CANCELED' },
  });
  expect(deliveries.held.size).toBe(0);
});

it('keeps each channel of a message with a fallback apart: one not reaching the person passes it on, the next decides it, a cancel ends the channel it names', async () => {
  const blockedBot = `bot-${randomUUID()}`;
  const calls: string[] = [];
  const provider: MessengerProvider = {
    ...gatedProvider().provider,
    send: (bot, message) => {
      calls.push(`${bot.botId}: ${message.text}`);
      return Promise.resolve(
        bot.botId === blockedBot
          ? { kind: 'rejected', code: 'BOT_BLOCKED_BY_USER', description: 'blocked', unreachable: 'blocked' }
          : { kind: 'sent', providerMessageId: '1' },
      );
    },
  };
  const journal = journalOf();
  const publisher = memoryPublisher();
  const deliveries = deliveriesWith({ provider, journal, publisher });
  const otherBot = `bot-${randomUUID()}`;
  const telegram = { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'test' };
  const max = { messenger: Messenger.MESSENGER_MAX, botName: 'max' };
  const first = { channel: 0, current: telegram, next: [max], tried: [] };
  const order = (
    botId: string,
    offset: number,
    messageId: string,
    fallback: FallbackRoute,
    sendInMs?: number,
  ) => {
    const e = consumedDelivery(botId, offset);
    return {
      ...e,
      record: deliveryRequest(
        'c',
        { messenger: 1, botId, chatId: '100', userId: '100' },
        { text: 'hi', messageId, fallback, ...(sendInMs ? { sendInMs } : {}) },
      ),
    };
  };
  const published = (messageId: string) =>
    publisher.published.filter((e) => e.topic === topics.message && e.key === messageId);
  deliveries.assign([0]);

  // Channel 0: the person blocked the bot. Not an outcome: MessageAttemptFailed, with the bot-update still.
  const messageId = randomUUID();
  await deliveries.store([order(blockedBot, 0, messageId, first)]);
  await eventually('channel 0 decided', () => (published(messageId).length === 1 ? true : undefined));
  const [failed] = published(messageId);
  expect(failed!.record.metadata.eventId).toBe(derivedEventId(messageId, 'outcome'));
  expect(failed!.record.event).toMatchObject({
    $case: 'messageAttemptFailed',
    value: {
      route: first,
      attempt: { ...telegram, botId: blockedBot, errorCode: 'BOT_BLOCKED_BY_USER' },
      acceptedAt: expect.any(Date),
    },
  });
  const { attempt } = (failed!.record.event as { value: MessageAttemptFailed }).value;
  expect(publisher.published.filter((e) => e.topic === topics.botUpdate)).toHaveLength(1);

  // Channel 1: its own journal entry, and the outcome, keyed and streamed by the message.
  const second = { channel: 1, current: max, next: [], tried: [attempt!] };
  await deliveries.store([order(otherBot, 1, messageId, second)]);
  await eventually('channel 1 decided', () => (published(messageId).length === 2 ? true : undefined));
  const sent = published(messageId)[1]!;
  expect(sent.record.metadata).toMatchObject({
    eventId: derivedEventId(derivedEventId(messageId, 'channel/1'), 'outcome'),
    streamId: messageId,
  });
  expect(sent.record.event).toMatchObject({ $case: 'messageSent', value: { fallback: second } });
  expect(
    (await journal.rowsOf([messageId, derivedEventId(messageId, 'channel/1')])).map((r) => r.status).sort(),
  ).toEqual(['failed', 'sent']);

  // Another message: not routable on channel 0 (the registry's CLIENT_NOT_FOUND) passes it on too; a cancel
  // of channel 1 before its order ends it CANCELED there, and the order then makes no call.
  const canceledId = randomUUID();
  const routed = order(otherBot, 2, canceledId, second);
  await deliveries.store([
    consumedAbout(routed, 3, {
      $case: 'deliveryUnroutable',
      value: {
        messageId: canceledId,
        errorCode: 'CLIENT_NOT_FOUND',
        errorDescription: 'no link',
        acceptedAt: new Date(),
        fallback: first,
      },
    }),
    consumedAbout(routed, 4, {
      $case: 'deliveryCancelRequested',
      value: { messageId: canceledId, fallback: second },
    }),
  ]);
  await deliveries.store([{ ...routed, offset: '5' }]);

  // A cancel of a channel whose order waits in the journal (scheduled) names the bot as routed, though the
  // gateway knew only the name requested (none: the default bot).
  const scheduledId = randomUUID();
  const scheduled = order(otherBot, 6, scheduledId, second, 60_000);
  await deliveries.store([scheduled]);
  const requested = { ...second, current: { ...max, botName: '' } };
  await deliveries.store([
    consumedAbout(scheduled, 7, {
      $case: 'deliveryCancelRequested',
      value: { messageId: scheduledId, fallback: requested },
    }),
  ]);
  await eventually('both offsets let go of', () => (deliveries.held.size === 0 ? true : undefined), 30_000);
  await eventually('the cancel published', () => (published(scheduledId).length === 1 ? true : undefined));
  await deliveries.stop();
  expect(published(scheduledId)[0]!.record.event).toMatchObject({
    $case: 'messageDeliveryFailed',
    value: { errorCode: 'CANCELED', fallback: second },
  });
  expect(published(canceledId).map((e) => e.record.event)).toMatchObject([
    { $case: 'messageAttemptFailed', value: { route: first, attempt: { errorCode: 'CLIENT_NOT_FOUND' } } },
    { $case: 'messageDeliveryFailed', value: { errorCode: 'CANCELED', fallback: second } },
    { $case: 'messageDeliveryFailed', value: { errorCode: 'CANCELED', fallback: second } },
  ]);
  expect(calls).toEqual([`${blockedBot}: hi`, `${otherBot}: hi`]);
});
