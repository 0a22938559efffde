// Reads the log in parallel: the partitions to read are dealt round-robin to `threads` worker threads,
// each with its own consumer, decoding and folding its partitions; their outputs (rows and per-partition
// folds, which never overlap) are merged here. threads = 0 reads everything in this thread, the same
// code without workers.
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { streamSpec, type StreamKey } from './streams.js';
import { createKafkaClient, topicName, topicOffsets, topicOffsetsAt, type KafkaSettings } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import type { Filter, PartitionFold, ShardMode, ShardOutput, SummaryPart } from './fold.js';
import { readShard, type PartitionRange, type ShardInput } from './read-shard.js';

export interface ReadLogOptions {
  settings: KafkaSettings;
  streams: readonly StreamKey[];
  mode: ShardMode;
  filter: Filter;
  /** Start at the first record at or after this time (default: the beginning, or `starts`). */
  from?: Date;
  /** Where each partition (`topic/partition`) starts, e.g. where the previous export stopped. */
  starts?: Record<string, string>;
  prior?: Record<string, PartitionFold>;
  /** Worker threads (default: one per core); 0 reads in the calling thread. */
  threads?: number;
  onProgress?: (done: number, total: number) => void;
}

export interface LogRead extends Omit<ShardOutput, 'summary'> {
  /** summary mode: every shard's summary part. */
  summaries: SummaryPart[];
  /** Where each partition read ends (`topic/partition` -> next offset): where to resume next time. */
  ends: Record<string, string>;
  /** Partitions whose oldest events retention deleted before they were read. */
  trimmed: string[];
}

export function defaultThreads(): number {
  return Math.max(1, availableParallelism());
}

/** The ranges to read: from the start asked for to each partition's end now. */
async function plan(
  o: ReadLogOptions,
): Promise<{ ranges: PartitionRange[]; ends: Record<string, string>; trimmed: string[] }> {
  const kafka = createKafkaClient(o.settings, createLogger({ service: 'mds-replay', level: 'silent' }));
  const admin = kafka.admin();
  await admin.connect();
  const ranges: PartitionRange[] = [];
  const ends: Record<string, string> = {};
  const trimmed: string[] = [];
  try {
    for (const stream of o.streams) {
      const topic = topicName(streamSpec(stream), o.settings.topicPrefix);
      const byTime = new Map<number, bigint>();
      if (o.from)
        for (const p of await topicOffsetsAt(admin, topic, o.from.getTime()))
          byTime.set(p.partition, BigInt(p.offset));
      for (const p of await topicOffsets(admin, topic)) {
        const key = `${topic}/${p.partition}`;
        const low = BigInt(p.low);
        const end = BigInt(p.high);
        let start = low;
        const resume = o.starts?.[key];
        if (resume !== undefined) {
          start = BigInt(resume);
          if (start < low) {
            trimmed.push(key);
            start = low;
          }
        } else if (o.from) {
          const found = byTime.get(p.partition);
          // -1: no record at or after `from` in this partition.
          start = found === undefined ? low : found < 0n ? end : found;
        } else if (low > 0n) trimmed.push(key);
        ends[key] = (start > end ? start : end).toString();
        if (end > start)
          ranges.push({
            stream,
            topic,
            partition: p.partition,
            start: start.toString(),
            end: end.toString(),
          });
      }
    }
  } finally {
    await admin.disconnect();
  }
  return { ranges, ends, trimmed };
}

function workerFile(): { url: URL; execArgv?: string[] } {
  // From the TypeScript sources (tests, tsx) the worker runs through tsx as well.
  if (import.meta.url.endsWith('.ts'))
    return {
      url: new URL('./shard-worker.ts', import.meta.url),
      execArgv: ['--conditions=@mds/source', '--import', 'tsx'],
    };
  // The built worker needs no loader: one the parent runs under (tsx in the benchmark) would only slow
  // every worker's start-up by hooking each of its imports. It keeps the parent's export conditions.
  return { url: new URL('./shard-worker.js', import.meta.url), execArgv: conditionsOf(process.execArgv) };
}

/** The export-condition flags among Node's flags (`--conditions=x`, `--conditions x`, `-C x`). */
export function conditionsOf(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const flag = execArgv[i]!;
    if (flag.startsWith('--conditions=')) kept.push(flag);
    else if ((flag === '--conditions' || flag === '-C') && i + 1 < execArgv.length)
      kept.push(flag, execArgv[++i]!);
  }
  return kept;
}

function runWorker(input: ShardInput, onRecords: (n: number) => void): Promise<ShardOutput> {
  const { url, execArgv } = workerFile();
  return new Promise((resolve, reject) => {
    const worker = new Worker(url, { workerData: input, ...(execArgv ? { execArgv } : {}) });
    let settled = false;
    worker.on('message', (m: { progress?: number; output?: ShardOutput; error?: string }) => {
      if (m.progress) onRecords(m.progress);
      if (m.error !== undefined) {
        settled = true;
        reject(new Error(m.error));
        void worker.terminate();
      } else if (m.output) {
        settled = true;
        resolve(m.output);
        void worker.terminate();
      }
    });
    worker.on('error', (error) => {
      settled = true;
      reject(error instanceof Error ? error : new Error(String(error)));
    });
    worker.on('exit', (code) => {
      if (!settled) reject(new Error(`replay worker exited with code ${code} before it finished`));
    });
  });
}

/** Reads the streams' partitions from their starts to their ends now, in `threads` shards. */
export async function readLog(o: ReadLogOptions): Promise<LogRead> {
  const { ranges, ends, trimmed } = await plan(o);
  const total = ranges.reduce((n, r) => n + Number(BigInt(r.end) - BigInt(r.start)), 0);
  const threads = o.threads ?? defaultThreads();
  const shards = Math.max(1, Math.min(threads, ranges.length));
  const deal: PartitionRange[][] = Array.from({ length: shards }, () => []);
  // Largest first, each to the shard with the least so far: shards of about equal work.
  const size = (r: PartitionRange) => Number(BigInt(r.end) - BigInt(r.start));
  const load = new Array<number>(shards).fill(0);
  for (const r of [...ranges].sort((a, b) => size(b) - size(a))) {
    const i = load.indexOf(Math.min(...load));
    deal[i]!.push(r);
    load[i]! += size(r);
  }
  const prior = o.prior ?? {};
  const inputs: ShardInput[] = deal.map((partitions) => ({
    settings: o.settings,
    partitions,
    mode: o.mode,
    filter: o.filter,
    prior: Object.fromEntries(
      partitions
        .map((p) => `${p.topic}/${p.partition}`)
        .filter((k) => prior[k])
        .map((k) => [k, prior[k]!]),
    ),
  }));
  let done = 0;
  const progress = (n: number) => {
    done += n;
    o.onProgress?.(done, total);
  };
  const outputs =
    threads === 0
      ? [await readShard(inputs[0]!, progress)]
      : await Promise.all(inputs.map((input) => runWorker(input, progress)));
  const merged: LogRead = {
    events: 0,
    skipped: 0,
    rows: {},
    envelopes: [],
    summaries: [],
    folds: { ...prior },
    ends,
    trimmed,
  };
  for (const out of outputs) {
    merged.events += out.events;
    merged.skipped += out.skipped;
    if (out.summary) merged.summaries.push(out.summary);
    for (const [table, rows] of Object.entries(out.rows)) {
      const into = (merged.rows[table] ??= []);
      for (const row of rows) into.push(row);
    }
    for (const row of out.envelopes) merged.envelopes.push(row);
    Object.assign(merged.folds, out.folds);
  }
  return merged;
}
