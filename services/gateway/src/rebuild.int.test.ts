import { randomUUID } from 'node:crypto';
import { Messenger, newEvent, topics, type MessageEvent } from '@mds/contracts';
import { openDatabase } from '@mds/db';
import { createEventPublisher, createKafkaClient } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { allStates } from '@mds/message-state/store';
import { rebuildEventStates } from '@mds/replay';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { companyWithKey, eventually, post, startStack, type TestStack } from '../test/support.js';
import { SCHEMA } from './adapters/db/migrations.js';

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

const logger = createLogger({ service: 'test', level: 'silent' });

it("a rebuild from the log equals the gateway's live read model", async () => {
  const { apiKey, companyId } = await companyWithKey(stack);
  const ids: string[] = [];
  const accept = async (path: string, body: unknown) => {
    const response = await post(stack, path, body, { 'x-api-key': apiKey });
    expect(response.status).toBe(202);
    ids.push(((await response.json()) as { event_id: string }).event_id);
  };
  for (let i = 0; i < 5; i++) {
    await accept('/send', {
      phone_number: '79123456789',
      text: `hello ${i}`,
      service: i % 2 ? 'max' : 'telegram',
      ...(i % 3 ? { bot_name: 'shop' } : {}),
    });
  }
  await accept('/change_phone', { old_phone: '79123456789', new_phone: '79876543210' });
  await accept('/client/check', { phone_number: '79123456789' });

  // Messages a sender delivered (written here), one of its events twice, then a stray late failure.
  const kafka = createKafkaClient({ brokers: testInfra().kafkaBrokers, clientId: 'test' }, logger);
  const publisher = createEventPublisher({ kafka, logger, topicPrefix: stack.topicPrefix });
  await publisher.connect();
  const delivered: string[] = [];
  for (let i = 0; i < 3; i++) {
    const id = randomUUID();
    delivered.push(id);
    const record = (event: NonNullable<MessageEvent['event']>) =>
      newEvent<MessageEvent>({
        eventId: randomUUID(),
        occurredAt: new Date(),
        companyId,
        streamId: id,
        producer: 'test',
        event,
      });
    const sent = record({
      $case: 'messageSent',
      value: { botId: 'bot-1', providerMessageId: String(i), sentAt: new Date(), attempts: 1 },
    });
    await publisher.publish(
      [
        record({
          $case: 'messageAccepted',
          value: {
            phoneNumber: '79123456789',
            text: 'hi',
            messenger: Messenger.MESSENGER_TELEGRAM,
            botName: '',
            buttons: [],
            apiKeyId: 'k',
            idempotencyKey: '',
          },
        }),
        sent,
        sent,
        record({
          $case: 'messageDeliveryFailed',
          value: {
            errorCode: 'CLIENT_NOT_FOUND',
            errorDescription: 'late',
            failedAt: new Date(),
            attempts: 0,
            botId: '',
          },
        }),
      ].map((r) => ({ topic: topics.message, key: id, record: r })),
    );
  }
  await publisher.disconnect();

  // Everything has come out: client-registry answered every request; the messages sent through the API
  // wait for a sender (none runs here: they stay new); the delivered ones have their three events.
  const live = await openDatabase({ url: stack.databaseUrl, schema: SCHEMA });
  const rebuiltSchema = uniqueName('rebuilt').toLowerCase();
  try {
    await eventually('the read model to have every outcome', async () => {
      const states = await allStates(live);
      const done = states.filter((s) =>
        delivered.includes(s.eventId) ? s.history.length === 3 : s.kind === 'message' || s.status !== 'new',
      );
      return done.length === ids.length + delivered.length;
    });
    const result = await rebuildEventStates({
      settings: { brokers: testInfra().kafkaBrokers, clientId: 'test', topicPrefix: stack.topicPrefix },
      databaseUrl: stack.databaseUrl,
      schema: rebuiltSchema,
    });
    expect(result.states).toBe(ids.length + delivered.length);
    const rebuilt = await openDatabase({ url: stack.databaseUrl, schema: rebuiltSchema });
    try {
      const liveStates = await allStates(live);
      expect(
        liveStates
          .filter((s) => s.status === 'sent')
          .map((s) => s.eventId)
          .sort(),
      ).toEqual([...delivered].sort());
      expect(await allStates(rebuilt)).toEqual(liveStates);
    } finally {
      await rebuilt.destroy();
    }
  } finally {
    await live.destroy();
  }
});
