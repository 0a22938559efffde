import { randomUUID } from 'node:crypto';
import { newEvent, topics, type Complete, type MessageEvent } from '@mds/contracts';
import { createLogger } from '@mds/logging';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { createKafkaClient, type ConsumedEvent } from '../src/index.js';

export const logger = createLogger({ service: 'kafka-test', level: process.env.TEST_LOG_LEVEL ?? 'silent' });

export function testKafka(clientId = 'kafka-test') {
  return createKafkaClient({ brokers: testInfra().kafkaBrokers, clientId }, logger);
}

export function prefix(): string {
  return `${uniqueName('t')}.`;
}

export function messageSent(messageId: string, n = 1): Complete<MessageEvent> {
  return newEvent<MessageEvent>({
    eventId: randomUUID(),
    occurredAt: new Date(),
    companyId: 'company-1',
    streamId: messageId,
    producer: 'kafka-test',
    event: { $case: 'messageSent', value: { botId: 'bot-1', providerMessageId: String(n), attempts: n } },
  });
}

export const messageTopic = topics.message;

/** Resolves once `predicate` holds for what has been collected so far. */
export async function waitFor(what: string, predicate: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export function ids(events: ConsumedEvent<MessageEvent>[]): string[] {
  return events.map((e) => e.record.metadata.eventId);
}
