import { randomUUID } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { newEvent, topics, type MessageEvent } from '@mds/contracts';
import type { Migration } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import type { EventPublisher, OutgoingEvent } from '@mds/kafka';
import { eventually, testInfra } from '@mds/local-infra/testing';
import { createLogger } from '@mds/logging';
import { appendToOutbox, createOutboxRelay, outboxColumns, type OutboxRelay } from './index.js';

const outboxTable: Migration = {
  name: '0001_outbox',
  up: (db) => db.schema.createTable('outbox', outboxColumns),
  down: (db) => db.schema.dropTable('outbox'),
};

let schema: TestSchema;
const cleanups: (() => Promise<void>)[] = [];
beforeAll(async () => {
  schema = await migratedTestSchema('outbox_test', [outboxTable]);
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(() => schema?.drop());

const logger = createLogger({ service: 'outbox-test', level: 'silent' });

/** Records what it is asked to publish, as "which relay: stream id". */
function recordingPublisher(name: string, published: string[]): EventPublisher {
  return {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    healthy: () => true,
    publish: (events: readonly OutgoingEvent[]) => {
      for (const e of events) published.push(`${name}:${e.record.metadata.streamId}`);
      return Promise.resolve();
    },
  };
}

async function append(streamId: string): Promise<void> {
  const record = newEvent<MessageEvent>({
    eventId: randomUUID(),
    occurredAt: new Date(),
    companyId: 'company-1',
    streamId,
    producer: 'outbox-test',
    event: { $case: 'messageSent', value: { botId: 'bot-1', providerMessageId: '1', attempts: 1 } },
  });
  await schema.db.transaction((trx) =>
    appendToOutbox(trx, [{ topic: topics.message, key: streamId, record }]),
  );
}

/**
 * A TCP relay to PostgreSQL that can go silent: it stops passing bytes and closes the database side,
 * while the client's socket stays open and hears nothing (a half-open connection). New connections then
 * hang too.
 */
async function silenceableProxy(): Promise<{ url: string; silence(): void; close(): Promise<void> }> {
  const target = new URL(testInfra().databaseUrl);
  const pairs: [Socket, Socket][] = [];
  const unanswered: Socket[] = [];
  let silent = false;
  const server: Server = createServer((client) => {
    if (silent) {
      unanswered.push(client); // accepted, never answered
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    pairs.push([client, upstream]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    silence() {
      silent = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.removeAllListeners('data');
        client.pause();
        upstream.destroy(); // the server ends the session, and with it the session's advisory lock
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of [...pairs.flat(), ...unanswered]) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function relay(name: string, databaseUrl: string, published: string[]): OutboxRelay {
  const r = createOutboxRelay({
    name: `outbox-test-${schema.schema}`,
    db: schema.db,
    databaseUrl,
    publisher: recordingPublisher(name, published),
    logger,
    pollMs: 50,
  });
  cleanups.push(() => r.stop());
  return r;
}

it('a relay whose lock connection went silent stops relaying once another replica holds the lock', async () => {
  const proxy = await silenceableProxy();
  const published: string[] = [];
  // Replica A holds the lock through the proxy; replica B waits for it.
  await relay('A', proxy.url, published).start();
  await append('first');
  await eventually('A relaying', () => published.includes('A:first'));
  await relay('B', testInfra().databaseUrl, published).start();
  cleanups.push(() => proxy.close()); // first: A's stop then finds its lock connection closed

  proxy.silence();
  await eventually('B relaying', async () => {
    await append(`probe-${randomUUID()}`);
    return published.some((p) => p.startsWith('B:'));
  });
  // A's lock connection fails its check within the query timeout (5 s) plus the check interval (1 s).
  await new Promise((r) => setTimeout(r, 6_500));
  const before = published.length;
  for (let i = 0; i < 20; i++) await append(`after-${i}`);
  await eventually('the 20 relayed', () => published.length >= before + 20);
  await new Promise((r) => setTimeout(r, 500));

  const after = published.slice(before);
  expect(after.filter((p) => p.startsWith('A:'))).toEqual([]);
  expect(after).toEqual(Array.from({ length: 20 }, (_, i) => `B:after-${i}`));
});
