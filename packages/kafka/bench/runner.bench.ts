// What the consumer's runner costs per event on the happy path (every handler call passes): the batches of a
// fetch decoded, handed to a handler that does nothing, their offsets and lag recorded. No broker: kafkajs's
// batches are made here, as its runner hands them over (several partitions started in one turn). CPU time of
// this process per event, in rounds; with RUNNER=<path of another consumer-runner.ts> the same for it, side
// by side (alternating rounds), e.g. the version before a change:
//
//   git show main:packages/kafka/src/consumer-runner.ts > src/baseline-runner.ts
//   RUNNER=./baseline-runner.ts node --conditions=@mds/source --import tsx bench/runner.bench.ts
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import { createLogger } from '@mds/logging';
import { LagTracker } from '../src/consumer-lag.js';
import { CommitManager } from '../src/consumer-offsets.js';
import { BatchRunner } from '../src/consumer-runner.js';
import { NO_DEAD_LETTER_TABLE } from '../src/dead-letters.js';
import { messageSent, messageTopic } from '../test/support.js';

const PARTITIONS = 6;
const PER_BATCH = 100;
const FETCHES = 400;
const ROUNDS = 7;

const log = createLogger({ service: 'bench', level: 'silent' });
const value = Buffer.from(messageTopic.codec.encode(messageSent('m')));
const topic = 'bench.mds.message.v1';

type Runner = { eachBatch(payload: EachBatchPayload): Promise<void> };
type Make = () => Runner;

function options() {
  return {
    kafka: {} as never,
    logger: log,
    groupId: 'bench',
    topics: [messageTopic],
    deadLetters: NO_DEAD_LETTER_TABLE,
    handleBatch: () => Promise.resolve(),
  };
}

function commits() {
  return new CommitManager({ consumer: {} as never, groupId: 'bench', log, maxDeferred: 10_000 });
}

const current: Make = () =>
  new BatchRunner(options(), new Map([[topic, messageTopic]]), commits(), new LagTracker(), log, () => true);

/** One fetch: a batch per partition, started in the same turn, as kafkajs does. */
function fetchOf(n: number): EachBatchPayload[] {
  return Array.from({ length: PARTITIONS }, (_, partition) => {
    const base = n * PER_BATCH;
    const messages: KafkaMessage[] = Array.from({ length: PER_BATCH }, (_, i) => ({
      key: Buffer.from('m'),
      value,
      offset: String(base + i),
      timestamp: String(Date.now()),
      attributes: 0,
      headers: {},
    }));
    return {
      batch: { topic, partition, highWatermark: String(base + PER_BATCH), messages },
      resolveOffset: () => undefined,
      heartbeat: () => Promise.resolve(),
      isStale: () => false,
      isRunning: () => true,
      commitOffsetsIfNecessary: () => Promise.resolve(),
    } as unknown as EachBatchPayload;
  });
}

/** CPU microseconds per event for one round of FETCHES fetches. */
async function round(make: Make): Promise<number> {
  const runner = make();
  const fetches = Array.from({ length: FETCHES }, (_, n) => fetchOf(n));
  const start = process.cpuUsage();
  for (const fetch of fetches) await Promise.all(fetch.map((payload) => runner.eachBatch(payload)));
  const used = process.cpuUsage(start);
  return (used.user + used.system) / (FETCHES * PARTITIONS * PER_BATCH);
}

const runners: [string, Make][] = [['this build', current]];
if (process.env.RUNNER) {
  const module = (await import(
    process.env.RUNNER.startsWith('.') ? `../src/${process.env.RUNNER.slice(2)}` : process.env.RUNNER
  )) as {
    BatchRunner: new (...args: unknown[]) => Runner;
  };
  // The runner before lag and isolation took no lag tracker.
  runners.push([
    process.env.RUNNER,
    () => new module.BatchRunner(options(), new Map([[topic, messageTopic]]), commits(), log, () => true),
  ]);
}

for (const [, make] of runners) await round(make); // warm-up
const results = new Map<string, number[]>(runners.map(([name]) => [name, []]));
for (let r = 0; r < ROUNDS; r++)
  for (const [name, make] of runners) results.get(name)!.push(await round(make));
for (const [name, samples] of results) {
  const sorted = [...samples].sort((a, b) => a - b);
  console.log(
    `${name}: ${sorted[0]!.toFixed(2)} µs CPU per event (best), ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} median, ${sorted[sorted.length - 1]!.toFixed(2)} worst; ${PARTITIONS} partitions × ${PER_BATCH} events a fetch`,
  );
}
