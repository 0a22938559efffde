// Experiment: a bare chain of kafkajs hops, one process per hop. node --import tsx /tmp/floor.ts
import { fork } from 'node:child_process';
import kafkajs from 'kafkajs';
import { startInfra } from '@mds/local-infra';
import { ProcessSampler, findKafka } from './processes.js';

const role = process.argv[2];
const brokers = (process.env.BROKERS ?? '').split(',');
const MIN_BYTES = Number(process.env.MIN_BYTES ?? '1');
const MAX_WAIT = Number(process.env.MAX_WAIT ?? '500');
const CONC = Number(process.env.CONC ?? '12');
const kafka = () => new kafkajs.Kafka({ clientId: 'floor', brokers, logLevel: kafkajs.logLevel.NOTHING });

async function hop(from: string, to: string, group: string) {
  const k = kafka();
  const producer = k.producer({ idempotent: true });
  await producer.connect();
  const consumer = k.consumer({ groupId: group, minBytes: MIN_BYTES, maxWaitTimeInMs: MAX_WAIT, heartbeatInterval: 3000 });
  await consumer.connect();
  await consumer.subscribe({ topic: from, fromBeginning: false });
  await consumer.run({
    partitionsConsumedConcurrently: CONC,
    autoCommitInterval: 1000,
    eachBatch: async ({ batch }) => {
      await producer.send({ topic: to, acks: -1, messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) });
    },
  });
  process.on('SIGINT', () => process.exit(0));
  process.send?.('ready');
}

if (role === 'hop') {
  await hop(process.argv[3]!, process.argv[4]!, process.argv[5]!);
} else {
  const infra = await startInfra({ name: `floor-${process.pid}`, ephemeral: true, log: () => {} });
  const B = infra.kafkaBrokers;
  const k = new kafkajs.Kafka({ clientId: 'floor', brokers: B.split(','), logLevel: kafkajs.logLevel.NOTHING });
  const admin = k.admin(); await admin.connect();
  const topics = ['f0', 'f1', 'f2', 'f3'];
  await admin.createTopics({ topics: topics.map((t) => ({ topic: t, numPartitions: Number(process.env.PARTS ?? 12) })), waitForLeaders: true });
  const kids = [];
  for (let i = 0; i < 3; i++) {
    const c = fork(process.argv[1]!, ['hop', topics[i]!, topics[i + 1]!, `g${i}`], { env: { ...process.env, BROKERS: B }, execArgv: ['--import', 'tsx', ...(process.env.PROF ? ['--cpu-prof', '--cpu-prof-dir=/tmp/floorprof'] : [])] });
    await new Promise((r) => c.once('message', r));
    kids.push(c);
  }
  const sent = new Map<string, number>();
  const lat: number[] = [];
  const sink = k.consumer({ groupId: 'sink', minBytes: MIN_BYTES, maxWaitTimeInMs: MAX_WAIT });
  await sink.connect(); await sink.subscribe({ topic: 'f3', fromBeginning: false });
  await sink.run({ partitionsConsumedConcurrently: CONC, eachBatch: async ({ batch }) => {
    const now = performance.now();
    for (const m of batch.messages) { const t = sent.get(m.key!.toString()); if (t !== undefined) lat.push(now - t); }
  } });
  await new Promise((r) => setTimeout(r, 5000));
  const producer = k.producer({ idempotent: true }); await producer.connect();
  const sampler = new ProcessSampler([
    ...kids.map((c, i) => ({ name: `hop${i}`, pid: c.pid! })),
    { name: 'broker', pid: findKafka(Number(B.split(':')[1]))! },
    { name: 'bench', pid: process.pid },
  ]);
  for (const rate of (process.env.RATES ?? "100,500").split(",").map(Number)) {
    lat.length = 0;
    const s0 = sampler.sample();
    const seconds = 10;
    const n = rate * seconds;
    const t0 = performance.now();
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < n; i++) {
      const due = t0 + (i * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const key = `${rate}-${i}`;
      sent.set(key, performance.now());
      pending.push(producer.send({ topic: 'f0', acks: -1, messages: [{ key, value: Buffer.alloc(300) }] }));
    }
    if (rate === 0) await new Promise((r) => setTimeout(r, seconds * 1000));
    await Promise.all(pending);
    const deadline = performance.now() + 10000;
    while (lat.length < n && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const s1 = sampler.sample();
    const use = ProcessSampler.between(s0, s1);
    const secs = (s1.at - s0.at) / 1000;
    lat.sort((a, b) => a - b);
    const p = (q: number) => lat[Math.min(lat.length - 1, Math.floor((q / 100) * lat.length))]?.toFixed(1);
    const chain = use.filter((u) => u.name !== 'bench').reduce((s, u) => s + u.cpuPercent, 0);
    console.log(`rate ${rate}/s: got ${lat.length}/${n} p50 ${p(50)} p99 ${p(99)} ms; CPU ` + use.map((u) => `${u.name} ${u.cpuPercent.toFixed(0)}%`).join(' ') +
      (n ? `; chain (hops+broker) ${((chain * secs * 10) / n).toFixed(3)} ms/msg` : ''));
  }
  for (const c of kids) c.kill('SIGINT'); await new Promise((r) => setTimeout(r, 2000));
  await infra.stop();
  process.exit(0);
}
