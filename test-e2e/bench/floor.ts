// The physical floor: the pipeline's Kafka hops as a bare kafkajs chain, one process per hop (consume ->
// produce, no database, none of our layer), with the HTTP calls the pipeline makes where it makes them (the
// sender's call to the simulator, the dispatcher's POST to the receiver), offered the same rates. The
// pipeline's figures divided by these say how far from the hardware it is.
import { fork, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { rawClient, rawProducer, rawTopics } from '@mds/kafka/raw';
import { wallNow } from '../src/pipeline/load.js';
import { ProcessSampler, type Watched } from './processes.js';

export interface FloorFigures {
  rate: number;
  latencies: number[];
  /** CPU ms per message of the hops, the broker and the simulator (the pipeline's stack, bare). */
  cpuPerMessage: number;
  received: number;
}

function startHop(args: string[]): Promise<ChildProcess> {
  const child = fork(join(import.meta.dirname, 'floor-hop.ts'), args, {
    execArgv: ['--conditions=@mds/source', '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`a floor hop exited with ${code}`)));
  });
}

export async function measureFloor(o: {
  brokers: string[];
  /** A URL the sender's hop POSTs once per record (the simulator). */
  simulatorUrl: string;
  /** A URL the dispatcher's hop POSTs once per record (the receiver). */
  receiverUrl: string;
  rates: number[];
  seconds: number;
  partitions: number;
  /** Processes besides the hops whose CPU counts (the broker, the simulator). */
  also: Watched[];
  say: (line: string) => void;
}): Promise<FloorFigures[]> {
  const run = `floor_${randomUUID().slice(0, 8)}`;
  const [accepted, routed, sent] = ['accepted', 'routed', 'sent'].map((t) => `${run}.${t}`) as [
    string,
    string,
    string,
  ];
  const kafka = rawClient(o.brokers, 'floor');
  await rawTopics(kafka, [accepted, routed, sent], o.partitions);
  const brokers = o.brokers.join(',');
  const hops = [
    await startHop([brokers, accepted, routed, `${run}.routing`, '-']),
    await startHop([brokers, routed, sent, `${run}.sender`, o.simulatorUrl]),
    await startHop([brokers, sent, '-', `${run}.dispatcher`, o.receiverUrl]),
  ];
  const arrived = new Map<string, number>();
  hops[2]!.on('message', (m: { keys: string[]; at: number }) => {
    for (const key of m.keys) if (!arrived.has(key)) arrived.set(key, m.at);
  });
  const producer = await rawProducer(kafka);
  const sampler = new ProcessSampler([
    ...hops.map((h, i) => ({ name: `floor hop ${i + 1}`, pid: h.pid! })),
    ...o.also,
  ]);
  const value = Buffer.alloc(400, 1);
  const results: FloorFigures[] = [];
  try {
    for (const rate of [o.rates[0]!, ...o.rates]) {
      const warmup = results.length === 0 && rate === o.rates[0] && !results.some((r) => r.rate === rate);
      const sentAt = new Map<string, number>();
      const before = sampler.sample();
      const total = Math.round(rate * (warmup ? 5 : o.seconds));
      const start = wallNow();
      const pending: Promise<void>[] = [];
      for (let i = 0; i < total;) {
        const due = Math.min(total, Math.floor(((wallNow() - start) * rate) / 1000) + 1);
        for (; i < due; i++) {
          const key = `${rate}-${i}-${randomUUID()}`;
          sentAt.set(key, wallNow());
          pending.push(producer.send(accepted, key, value));
        }
        await new Promise((r) => setTimeout(r, 2));
      }
      await Promise.all(pending);
      const deadline = performance.now() + 15_000;
      const got = () => [...sentAt.keys()].filter((k) => arrived.has(k)).length;
      while (got() < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const after = sampler.sample();
      if (warmup) {
        o.say(`floor warm-up: ${got()} of ${total} through the bare chain`);
        results.push({ rate: -1, latencies: [], cpuPerMessage: 0, received: 0 });
        continue;
      }
      const seconds = (after.at - before.at) / 1000;
      const cpu = ProcessSampler.between(before, after).reduce((s, u) => s + u.cpuPercent, 0);
      const latencies = [...sentAt].flatMap(([k, at]) => (arrived.has(k) ? [arrived.get(k)! - at] : []));
      results.push({
        rate,
        latencies,
        cpuPerMessage: (cpu * seconds * 10) / total,
        received: latencies.length,
      });
    }
  } finally {
    await producer.stop();
    for (const hop of hops) hop.kill('SIGTERM');
    await Promise.all(
      hops.map((h) => new Promise((r) => (h.exitCode !== null ? r(null) : h.once('exit', r)))),
    );
  }
  return results.filter((r) => r.rate >= 0);
}
