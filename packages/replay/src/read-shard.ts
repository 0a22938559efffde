// Reads the partitions of one shard with a bare kafkajs consumer (its own throw-away group, which takes
// exactly these partitions), from their start to the end they had when the replay began, and hands
// every fetch to a ShardFolder. Runs in a worker thread, or in the calling thread with --threads 0.
import { randomUUID } from 'node:crypto';
import type { StreamKey } from './streams.js';
import { createKafkaClient, type KafkaSettings } from '@mds/kafka/client';
import { createLogger } from '@mds/logging';
import kafkajs from 'kafkajs';
import {
  ShardFolder,
  summarizeShard,
  type Filter,
  type PartitionFold,
  type ShardMode,
  type ShardOutput,
} from './fold.js';

const { AssignerProtocol } = kafkajs;

export interface PartitionRange {
  stream: StreamKey;
  topic: string;
  partition: number;
  /** First offset to read (inclusive). */
  start: string;
  /** The partition's end when the replay began (exclusive). */
  end: string;
}

export interface ShardInput {
  settings: KafkaSettings;
  partitions: PartitionRange[];
  mode: ShardMode;
  filter: Filter;
  prior?: Record<string, PartitionFold>;
}

/** An assigner that gives this shard's one member exactly its partitions. */
function shardAssigner(partitions: PartitionRange[]) {
  const assignment: Record<string, number[]> = {};
  for (const p of partitions) (assignment[p.topic] ??= []).push(p.partition);
  return () => ({
    name: 'MdsReplayShard',
    version: 1,
    assign: ({ members }: { members: { memberId: string }[] }) =>
      Promise.resolve(
        members.map((m, i) => ({
          memberId: m.memberId,
          memberAssignment: AssignerProtocol.MemberAssignment.encode({
            version: 1,
            assignment: i === 0 ? assignment : {},
            userData: Buffer.alloc(0),
          }),
        })),
      ),
    protocol: ({ topics }: { topics: string[] }) => ({
      name: 'MdsReplayShard',
      metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }),
    }),
  });
}

export async function readShard(
  input: ShardInput,
  onProgress: (records: number) => void = () => undefined,
): Promise<ShardOutput> {
  // The event tables' descriptors are loaded only to export rows: a summary or fold starts without them.
  const tables = input.mode === 'export' ? (await import('./schema.js')).eventTables() : undefined;
  const folder = new ShardFolder(input.mode, input.filter, input.prior, tables);
  if (input.partitions.length === 0) {
    if (input.mode === 'summary') summarizeShard(folder.output);
    return folder.output;
  }
  const logger = createLogger({ service: 'mds-replay', level: 'silent' });
  const kafka = createKafkaClient({ ...input.settings, clientId: 'mds-replay' }, logger);
  const groupId = `mds-replay-${randomUUID()}`;
  const ranges = new Map(input.partitions.map((p) => [`${p.topic}/${p.partition}`, p]));
  const remaining = new Set(ranges.keys());
  const consumer = kafka.consumer({
    groupId,
    partitionAssigners: [shardAssigner(input.partitions)],
    maxWaitTimeInMs: 500,
  });
  let finish!: () => void;
  let fail!: (error: Error) => void;
  const finished = new Promise<void>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  consumer.on(consumer.events.CRASH, (e) => fail(e.payload.error));
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [...byTopicNames(input.partitions)], fromBeginning: true });
    const running = consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: input.partitions.length,
      eachBatch: ({ batch }) => {
        const key = `${batch.topic}/${batch.partition}`;
        const range = ranges.get(key);
        if (!range || !remaining.has(key)) return Promise.resolve();
        const end = BigInt(range.end);
        let messages = batch.messages;
        const last = messages.at(-1);
        if (last && BigInt(last.offset) >= end) messages = messages.filter((m) => BigInt(m.offset) < end);
        try {
          folder.handle(range.stream, batch.topic, batch.partition, messages);
        } catch (error) {
          fail(error as Error);
          return Promise.resolve();
        }
        onProgress(messages.length);
        if (BigInt(batch.lastOffset()) + 1n >= end) {
          remaining.delete(key);
          if (remaining.size === 0) finish();
        }
        return Promise.resolve();
      },
    });
    // Where each partition starts: seeks made now apply before the first fetch (no committed offsets;
    // admin.setOffsets would join the group once per topic just to commit them).
    for (const p of input.partitions)
      consumer.seek({ topic: p.topic, partition: p.partition, offset: p.start });
    await running;
    await finished;
  } finally {
    await consumer.disconnect();
  }
  if (input.mode === 'summary') summarizeShard(folder.output);
  return folder.output;
}

function byTopicNames(partitions: PartitionRange[]): Set<string> {
  return new Set(partitions.map((p) => p.topic));
}
