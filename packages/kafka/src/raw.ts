// Bare kafkajs, without this package's layer (batching, offsets, decoding), for benchmarks that measure
// what the client and the broker cost by themselves beside what we build on them.
import { randomUUID } from 'node:crypto';
import kafkajs, { type Kafka } from 'kafkajs';
// The same kafkajs the services run, with the fixes of its idle timers (kafkajs-fixes.ts).
import './kafkajs-fixes.js';

export function rawClient(brokers: string[], clientId = 'raw'): Kafka {
  return new kafkajs.Kafka({ clientId, brokers, logLevel: kafkajs.logLevel.NOTHING });
}

/** Reads a topic from the beginning with a new group until `total` records came, counting them; records/s. */
export async function rawRead(kafka: Kafka, topic: string, total: number): Promise<number> {
  const consumer = kafka.consumer({ groupId: `bench-raw-${randomUUID()}`, maxWaitTimeInMs: 500 });
  const began = performance.now();
  let seen = 0;
  let done!: () => void;
  const finished = new Promise<void>((resolve) => (done = resolve));
  await consumer.connect();
  await consumer.subscribe({ topics: [topic], fromBeginning: true });
  await consumer.run({
    partitionsConsumedConcurrently: 4,
    eachBatch: ({ batch }) => {
      seen += batch.messages.length;
      if (seen >= total) done();
      return Promise.resolve();
    },
  });
  await finished;
  const seconds = (performance.now() - began) / 1000;
  await consumer.disconnect();
  return total / seconds;
}

export interface RawHop {
  stop(): Promise<void>;
}

/**
 * One hop of a bare chain: consumes `from` and produces every record, key and value unchanged, to `to`
 * (idempotent producer, acks from all in-sync replicas), one produce per fetch; offsets committed every
 * second. With `work`, awaits it per fetch before producing (a call the hop makes, e.g. HTTP).
 */
export async function rawHop(o: {
  kafka: Kafka;
  from: string;
  to?: string;
  groupId: string;
  work?: (records: number) => Promise<void>;
  onRecords?: (keys: string[]) => void;
}): Promise<RawHop> {
  const producer = o.kafka.producer({ idempotent: true, allowAutoTopicCreation: false });
  await producer.connect();
  const consumer = o.kafka.consumer({ groupId: o.groupId, maxWaitTimeInMs: 500, minBytes: 1 });
  await consumer.connect();
  await consumer.subscribe({ topics: [o.from], fromBeginning: false });
  let joined!: () => void;
  const ready = new Promise<void>((resolve) => (joined = resolve));
  consumer.on(consumer.events.GROUP_JOIN, () => joined());
  await consumer.run({
    // Offsets committed at most once a second (as our layer does), not after every batch.
    autoCommit: false,
    autoCommitInterval: 1_000,
    partitionsConsumedConcurrently: 64,
    eachBatch: async (payload) => {
      const { batch } = payload;
      if (o.work) await o.work(batch.messages.length);
      o.onRecords?.(batch.messages.map((m) => m.key?.toString() ?? ''));
      if (o.to)
        await producer.send({
          topic: o.to,
          acks: -1,
          messages: batch.messages.map((m) => ({ key: m.key, value: m.value })),
        });
      payload.resolveOffset(batch.lastOffset());
      await payload.commitOffsetsIfNecessary();
    },
  });
  await ready;
  return {
    async stop() {
      await consumer.disconnect();
      await producer.disconnect();
    },
  };
}

/** An idempotent producer sending one record per call (as the gateway does for one request). */
export async function rawProducer(kafka: Kafka) {
  const producer = kafka.producer({ idempotent: true, allowAutoTopicCreation: false });
  await producer.connect();
  return {
    send: (topic: string, key: string, value: Buffer) =>
      producer.send({ topic, acks: -1, messages: [{ key, value }] }).then(() => undefined),
    stop: () => producer.disconnect(),
  };
}

/** Creates topics of `partitions` partitions (replication factor 1) unless they exist. */
export async function rawTopics(kafka: Kafka, names: string[], partitions: number): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: names.map((topic) => ({ topic, numPartitions: partitions })),
      waitForLeaders: true,
    });
  } finally {
    await admin.disconnect();
  }
}
