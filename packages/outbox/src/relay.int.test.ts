import { randomUUID } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { newEvent, topics, type MessageEvent } from '@mds/contracts';
import { deadLettersMigration, type Migration } from '@mds/db';
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
  schema = await migratedTestSchema('outbox_test', [deadLettersMigration, outboxTable]);
});
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
afterAll(() => schema?.drop());

const logger = createLogger({ service: 'outbox-test', level: 'silent' });

/** Records what it is asked to publish, as "which relay: stream id", and the bytes each would carry. */
function recordingPublisher(
  name: string,
  published: string[],
  bytes = new Map<string, Buffer>(),
): EventPublisher {
  return {
    connect: () => Promise.resolve(),
    disconnect: () => Promise.resolve(),
    healthy: () => true,
    publish: (events: readonly OutgoingEvent[]) => {
      for (const e of events) {
        published.push(`${name}:${e.record.metadata.streamId}`);
        bytes.set(e.record.metadata.streamId, Buffer.from(e.topic.codec.encode(e.record)));
      }
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

function relay(
  name: string,
  databaseUrl: string,
  published: string[],
  extra: { bytes?: Map<string, Buffer>; onQuarantined?: (n: number) => void } = {},
): OutboxRelay {
  const r = createOutboxRelay({
    name: `outbox-test-${schema.schema}`,
    db: schema.db,
    databaseUrl,
    publisher: recordingPublisher(name, published, extra.bytes),
    logger,
    pollMs: 50,
    ...(extra.onQuarantined ? { onQuarantined: extra.onQuarantined } : {}),
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

it('publishes an event of a type this build does not know as it is, and sets aside a row that is no event', async () => {
  const published: string[] = [];
  const bytes = new Map<string, Buffer>();
  let quarantined = 0;
  await relay('A', testInfra().databaseUrl, published, {
    bytes,
    onQuarantined: (n) => (quarantined += n),
  }).start();
  // A newer version's event: a known envelope, then an event in a field this build has never heard of.
  const envelopeOnly = Buffer.from(
    topics.message.codec.encode({
      metadata: {
        eventId: randomUUID(),
        type: 'MessageRecalled',
        occurredAt: new Date(),
        companyId: 'company-1',
        streamId: 'from-the-future',
        correlationId: '',
        causationId: '',
        producer: 'outbox-test',
        traceparent: '',
        tracestate: '',
      },
    }),
  );
  const newer = Buffer.concat([envelopeOnly, Buffer.from([0x9a, 0x06, 0x01, 0x2a])]);
  await schema.db('outbox').insert([
    { topic: topics.message.name, key: 'from-the-future', payload: newer },
    { topic: topics.message.name, key: 'garbage', payload: Buffer.from([0xff, 0xff, 0xff]) },
    { topic: 'mds.nonsense.v9', key: 'k', payload: envelopeOnly },
  ]);
  await append('after-them');
  await eventually('the rows after them relayed', () => published.includes('A:after-them'));
  expect(published).toContain('A:from-the-future');
  expect(bytes.get('from-the-future')).toEqual(newer);
  const dead = await schema
    .db('dead_letters')
    .orderBy('id')
    .select<{ source: string; topic: string; key: string }[]>();
  expect(dead.map((d) => [d.source, d.topic, d.key])).toEqual([
    ['outbox', topics.message.name, 'garbage'],
    ['outbox', 'mds.nonsense.v9', 'k'],
  ]);
  expect(quarantined).toBe(2);
  expect(await schema.db('outbox').count<{ count: string }[]>('* as count')).toEqual([{ count: '0' }]);
});
