import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent, topics, Messenger, type MessageEvent } from '@mds/contracts';
import { createEventPublisher, createKafkaClient, type EventPublisher } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { eventually } from '@mds/local-infra/testing';
import { Stack } from './harness.js';

const counter = {
  name: 'counter',
  command: [
    process.execPath,
    '--conditions=@mds/source',
    '--import',
    'tsx',
    join(import.meta.dirname, '../fixtures/counter-service/main.ts'),
  ],
};
const logger = createLogger({ service: 'harness-test', level: 'silent' });

let stack: Stack;
let publisher: EventPublisher;

beforeAll(async () => {
  stack = await Stack.start({ services: [counter] });
  publisher = createEventPublisher({
    kafka: createKafkaClient(
      { brokers: stack.infra.kafkaBrokers.split(','), clientId: 'harness-test' },
      logger,
    ),
    logger,
    topicPrefix: stack.topicPrefix,
  });
  await publisher.connect();
});

afterAll(async () => {
  await publisher?.disconnect();
  await stack?.stop();
});

async function publishAccepted(companyId: string, n: number): Promise<void> {
  await publisher.publish(
    Array.from({ length: n }, () => {
      const messageId = randomUUID();
      return {
        topic: topics.message,
        key: messageId,
        record: newEvent<MessageEvent>({
          eventId: randomUUID(),
          occurredAt: new Date(),
          companyId,
          streamId: messageId,
          producer: 'harness-test',
          event: {
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
          },
        }),
      };
    }),
  );
}

async function countOf(companyId: string): Promise<number> {
  const res = await fetch(`${stack.service('counter').url}/counts/${companyId}`);
  return ((await res.json()) as { accepted: number }).accepted;
}

describe('the end-to-end harness', () => {
  it('starts a service as a real process against the real broker and database, and hands out its address', async () => {
    const company = randomUUID();
    await publishAccepted(company, 25);
    await eventually('25 counted', async () => (await countOf(company)) === 25);
    const metrics = await (await fetch(`${stack.service('counter').url}/metrics`)).text();
    expect(metrics).toMatch(/mds_events_consumed_total\{[^}]*type="MessageAccepted"[^}]*\} 25/);
  });

  it('survives kill -9 and a restart: nothing lost, nothing counted twice', async () => {
    const company = randomUUID();
    const service = stack.service('counter');
    await publishAccepted(company, 30);
    await eventually('some counted', async () => (await countOf(company)) > 0);
    expect(await service.kill('SIGKILL')).toBeNull();
    await publishAccepted(company, 30);
    await service.start();
    await eventually('60 counted', async () => (await countOf(company)) === 60);
    await new Promise((r) => setTimeout(r, 500));
    expect(await countOf(company)).toBe(60);
  });

  it('stops a service gracefully on SIGTERM (exit 0) and starts it again', async () => {
    const service = stack.service('counter');
    expect(await service.stop()).toBe(0);
    expect(await service.ready()).toBe(false);
    await service.start();
    expect(await service.ready()).toBe(true);
  });
});
