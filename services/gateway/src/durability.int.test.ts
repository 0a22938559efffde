import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEventConsumer, createKafkaClient, NO_DEAD_LETTER_TABLE } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { DEFAULT_KAFKA_VERSION, freePort, startKafkaBroker, stopProcess } from '@mds/local-infra';
import { uniqueName } from '@mds/local-infra/testing';
import type { MessageEvent } from '@mds/contracts';
import { companyWithKey, messageTopic, post, startStack, type TestStack } from '../test/support.js';

// The gateway here writes to a broker of its own, which the test stops and starts again.
const logger = createLogger({ service: 'durability-test', level: 'silent' });
let dir: string;
let broker: { pid: number; brokers: string };
let ports: { port: number; controllerPort: number };
let stack: TestStack;
let apiKey: string;

async function startBroker() {
  broker = await startKafkaBroker({ version: DEFAULT_KAFKA_VERSION, dir, ...ports, heapMb: 256 });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'mds-durability-'));
  ports = { port: await freePort(), controllerPort: await freePort() };
  await startBroker();
  stack = await startStack({ KAFKA_BROKERS: broker.brokers, PUBLISH_TIMEOUT_MS: '2000' });
  apiKey = (await companyWithKey(stack)).apiKey;
});

afterAll(async () => {
  await stack?.stop();
  if (broker) await stopProcess(broker.pid);
  rmSync(dir, { recursive: true, force: true });
});

const send = (i: number) =>
  post(
    stack,
    '/send',
    { phone_number: '79123456789', text: `message ${i}`, service: 'telegram' },
    { 'x-api-key': apiKey },
  ).then(async (response) => ({
    status: response.status,
    body: (await response.json()) as { event_id?: string; code?: string },
    headers: response.headers,
  }));

describe('when Kafka is down', () => {
  it('answers 503 with Retry-After, never 202; and nothing it acknowledged is lost once Kafka is back', async () => {
    const acknowledged: string[] = [];
    const outcomes: number[] = [];
    let i = 0;
    const load = (async () => {
      // A bounded stream of sends across the outage.
      for (let round = 0; round < 40; round++) {
        const results = await Promise.all(Array.from({ length: 5 }, () => send(i++)));
        for (const r of results) {
          outcomes.push(r.status);
          if (r.status === 202) acknowledged.push(r.body.event_id!);
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    await stopProcess(broker.pid);

    const refused = await send(-1);
    expect(refused.status).toBe(503);
    expect(refused.body.code).toBe('broker_unavailable');
    expect(refused.headers.get('retry-after')).toBe('5');

    await startBroker();
    await load;
    // Back to normal.
    let recovered = await send(-2);
    for (let tries = 0; recovered.status !== 202 && tries < 20; tries++) {
      await new Promise((r) => setTimeout(r, 500));
      recovered = await send(-2);
    }
    expect(recovered.status).toBe(202);
    acknowledged.push(recovered.body.event_id!);
    expect(outcomes.every((s) => s === 202 || s === 503)).toBe(true);
    expect(outcomes).toContain(503);

    // Every acknowledged message is in the log.
    const seen = new Set<string>();
    const consumer = createEventConsumer<MessageEvent>({
      kafka: createKafkaClient({ brokers: [broker.brokers], clientId: 'durability-check' }, logger),
      logger,
      groupId: uniqueName('check'),
      topics: [messageTopic],
      topicPrefix: stack.topicPrefix,
      deadLetters: NO_DEAD_LETTER_TABLE,
      handleBatch: async (events) => {
        for (const e of events) seen.add(e.record.metadata.streamId);
      },
    });
    await consumer.start();
    try {
      const deadline = Date.now() + 30_000;
      while (acknowledged.some((id) => !seen.has(id)) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 200));
    } finally {
      await consumer.stop();
    }
    const lost = acknowledged.filter((id) => !seen.has(id));
    console.log(
      `durability: ${acknowledged.length} acknowledged, ${outcomes.filter((s) => s === 503).length} refused with 503, ${lost.length} lost`,
    );
    expect(lost).toEqual([]);
  });
});
