// npm run bench (replay): how fast mds-replay folds the message stream, in events per second over
// BENCH_EVENTS (1,000,000) events, beside a raw kafkajs read of the same topic in the same run.
// Target: at least 60 % of the raw read's rate, in worker threads sharded by partition (one per core).
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { topics } from '@mds/contracts';
import { createKafkaClient, provisionTopics, topicName, type Kafka } from '@mds/kafka';
import { rawRead } from '@mds/kafka/raw';
import { startInfra } from '@mds/local-infra';
import { createLogger } from '@mds/logging';
// The built code (turbo builds it before bench), as mds-replay runs it.
import { defaultThreads, summaryOf } from '@mds/replay';
import { syntheticMessages } from '../test/synthetic.js';

const TOTAL = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const logger = createLogger({ service: 'replay-bench', level: 'warn' });
// Figures from a busy machine mean little: say how busy it was (1, 5 and 15 minute load averages).
const load = () =>
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')} on ${cpus().length} cores`;
console.log(`start: ${load()}`);

// Only a broker is needed: a placeholder DATABASE_URL keeps startInfra from starting PostgreSQL.
const infra = await startInfra({
  name: 'bench-replay',
  ephemeral: true,
  env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://unused' },
  log: (line) => console.error(`[infra] ${line}`),
});

async function produce(kafka: Kafka, topic: string): Promise<number> {
  // Fast loading, not the service's durable path: acks from the leader only, big batches, 4 in flight.
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const codec = topics.message.codec;
  let written = 0;
  let chunk = 0;
  const inFlight = new Set<Promise<unknown>>();
  const start = new Date(Date.now() - 24 * 3600_000);
  while (written < TOTAL) {
    const { events } = syntheticMessages(10_000, {
      companies: ['c1', 'c2', 'c3'],
      start: new Date(start.getTime() + chunk++ * 10_000),
    });
    const messages = events.slice(0, TOTAL - written).map((e) => ({
      key: e.key,
      value: Buffer.from(codec.encode(e.record)),
      timestamp: String(e.record.metadata.occurredAt!.getTime()),
    }));
    written += messages.length;
    const sent = producer.send({ topic, messages, acks: 1 });
    inFlight.add(sent);
    void sent.finally(() => inFlight.delete(sent));
    if (inFlight.size >= 4) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await producer.disconnect();
  return written;
}

/**
 * mds-replay summary's path: the partitions dealt to one worker thread per core, each with its own
 * consumer, protobuf decode and fold of every event into its message's state, each shard's summary
 * (counts, latencies) merged here.
 */
async function replay(brokers: string[], prefix: string, total: number, threads?: number): Promise<number> {
  const began = performance.now();
  const s = await summaryOf({
    settings: { brokers, clientId: 'replay-bench', topicPrefix: prefix },
    ...(threads !== undefined ? { threads } : {}),
  });
  const seconds = (performance.now() - began) / 1000;
  if (s.events !== total) throw new Error(`replay read ${s.events} events, expected ${total}`);
  if (s.messages.total === 0) throw new Error('replay folded nothing');
  return s.events / seconds;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

try {
  const kafka = createKafkaClient(
    { brokers: infra.kafkaBrokers.split(','), clientId: 'replay-bench' },
    logger,
  );
  const prefix = `bench_${randomUUID().slice(0, 8)}.`;
  await provisionTopics(kafka, [topics.message, topics.clientRequest], { prefix });
  const topic = topicName(topics.message, prefix);
  const loadBegan = performance.now();
  const total = await produce(kafka, topic);
  console.log(
    `loaded ${fmt(total)} events into ${topic} (${topics.message.partitions} partitions) in ${((performance.now() - loadBegan) / 1000).toFixed(1)} s`,
  );
  // One untimed read first: a fresh broker creates its group coordinator (__consumer_offsets) on the
  // first group that joins, which would otherwise slow whichever read of round 1 came first.
  await rawRead(kafka, topic, total);
  const raw: number[] = [];
  const folded: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    raw.push(await rawRead(kafka, topic, total));
    folded.push(await replay(infra.kafkaBrokers.split(','), prefix, total));
    console.log(
      `round ${round}: raw kafkajs read ${fmt(raw.at(-1)!)} events/s, replay (decode + fold + summary) ${fmt(folded.at(-1)!)} events/s (${load()})`,
    );
  }
  const bestRaw = Math.max(...raw);
  const bestReplay = Math.max(...folded);
  const ratios = raw.map((r, i) => `${((100 * folded[i]!) / r).toFixed(0)}%`).join(', ');
  // The same fold in the calling thread alone (--threads 0), beside one more raw read: what the threads add.
  const singleRaw = await rawRead(kafka, topic, total);
  const single = await replay(infra.kafkaBrokers.split(','), prefix, total, 0);
  console.log(
    `single thread (--threads 0): replay ${fmt(single)} events/s, raw kafkajs read ${fmt(singleRaw)} events/s, ratio ${((100 * single) / singleRaw).toFixed(0)}% (${load()})`,
  );
  console.log(
    `replay: ${fmt(bestReplay)} events/s in ${defaultThreads()} worker threads, raw kafkajs read: ${fmt(bestRaw)} events/s, ratio ${((100 * bestReplay) / bestRaw).toFixed(0)}% (target >= 60%; per round: ${ratios}) — best of ${ROUNDS} rounds, ${fmt(total)} events`,
  );
} finally {
  await infra.stop();
}
