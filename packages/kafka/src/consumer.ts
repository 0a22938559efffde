import { UndecodableEventError, type Complete, type StreamRecord, type TopicSpec } from '@mds/contracts';
import type { Logger } from '@mds/logging';
import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import type { KafkaMetrics } from './metrics.js';
import { topicName } from './topics.js';

export interface ConsumedEvent<R extends StreamRecord = StreamRecord> {
  topic: string;
  /** The declared topic it came from (its base name tells which stream). */
  spec: TopicSpec<R>;
  partition: number;
  offset: string;
  key: string | null;
  record: Complete<R>;
}

export interface BatchContext {
  topic: string;
  partition: number;
  /**
   * Keeps this member in its group during long work. Rejects when the group is rebalancing or has dropped
   * this member: let that error go up (the batch then comes again to whoever owns the partition).
   */
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping: finish up, do not start new work. */
  isRunning(): boolean;
}

export interface EventConsumerOptions<R extends StreamRecord = StreamRecord> {
  kafka: Kafka;
  logger: Logger;
  groupId: string;
  topics: readonly TopicSpec<R>[];
  topicPrefix?: string;
  metrics?: KafkaMetrics;
  /**
   * Stores the effects of a batch of events from one partition, in order. The batch's offsets are
   * committed only after this resolves; if it throws, the same batch is retried (never skipped), so
   * effects must be idempotent (dedupe by metadata.eventId with the state).
   */
  handleBatch(events: ConsumedEvent<R>[], context: BatchContext): Promise<void>;
  /**
   * The partitions this member owns, by topic name: called with an empty map when a rebalance begins
   * (kafkajs revokes everything first) or the consumer stops, and with the new assignment once joined.
   */
  onAssignment?: (partitions: ReadonlyMap<string, readonly number[]>) => void;
  /** Called after each chunk's offsets are committed (also for chunks with nothing decodable). */
  onCommitted?: (topic: string, partition: number, nextOffset: bigint) => void;
  /** Events handed to one handleBatch call at most. */
  maxBatchSize?: number;
  /** Partitions handled in parallel (order within each partition is kept). */
  partitionsConsumedConcurrently?: number;
  /** A new group starts at the beginning of the log (rebuilding state) unless told otherwise. */
  fromBeginning?: boolean;
  /**
   * How long the group waits for a silent member (a crashed process) before giving its partitions to
   * others. 10 s by default: a crashed replica's work resumes quickly; heartbeats go out every 3 s and
   * between chunks, so only a handler stuck for 10 s loses its partitions (and then they come again).
   */
  sessionTimeoutMs?: number;
  /** Longest wait of one fetch for `fetchMinBytes` of new records (bounds how long stop() takes); 50 ms. */
  maxWaitTimeMs?: number;
  /** A fetch returns once this much is there (or after `maxWaitTimeMs`); 4 KiB. */
  fetchMinBytes?: number;
  /** Backoff between retries of a failing batch. */
  retryBackoffMs?: { initial: number; max: number };
}

export interface EventConsumer {
  /** Joins the group and starts consuming; resolves once the first partitions are assigned. */
  start(): Promise<void>;
  /** Stops fetching, lets the batch in hand finish and commit, leaves the group. */
  stop(): Promise<void>;
  /** True while the consumer is running and in its group. */
  healthy(): boolean;
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A consumer whose offsets move only after the handler has stored the effects of the events before
 * them: a crash at any point means those events come again, never that they are lost.
 */
export function createEventConsumer<R extends StreamRecord>(o: EventConsumerOptions<R>): EventConsumer {
  const byName = new Map(o.topics.map((spec) => [topicName(spec, o.topicPrefix), spec]));
  const maxBatchSize = o.maxBatchSize ?? 500;
  const backoff = o.retryBackoffMs ?? { initial: 200, max: 30_000 };
  const log = o.logger.child({ consumerGroup: o.groupId });
  const consumer: Consumer = o.kafka.consumer({
    groupId: o.groupId,
    sessionTimeout: o.sessionTimeoutMs ?? 10_000,
    heartbeatInterval: 3_000,
    allowAutoTopicCreation: false,
    readUncommitted: false,
    // A fetch answers once a few records are there, or after a short wait: under load, handlers get
    // batches instead of single events (one transaction and one commit for many), and an idle partition
    // adds at most the wait. stop() waits for the fetch in progress.
    maxWaitTimeInMs: o.maxWaitTimeMs ?? 50,
    minBytes: o.fetchMinBytes ?? 4_096,
  });
  let running = false;
  let inGroup = false;
  let joined: (() => void) | undefined;
  let cancelJoin: ((error: Error) => void) | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  let restarts = 0;

  const noPartitions = new Map<string, number[]>();
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    inGroup = true;
    restarts = 0;
    log.info({ assignment: e.payload.memberAssignment }, 'joined consumer group');
    o.onAssignment?.(new Map(Object.entries(e.payload.memberAssignment)));
    joined?.();
  });
  consumer.on(consumer.events.REBALANCING, () => o.onAssignment?.(noPartitions));
  consumer.on(consumer.events.CRASH, (e) => {
    inGroup = false;
    o.onAssignment?.(noPartitions);
    log.error({ err: e.payload.error, restart: e.payload.restart }, 'consumer crashed');
    // kafkajs starts the consumer again only after errors it deems retriable; after any other it stays
    // disconnected for good, and the service would stay unready until someone restarted it.
    if (!e.payload.restart && running) startAgainLater();
  });
  consumer.on(consumer.events.STOP, () => {
    inGroup = false;
    o.onAssignment?.(noPartitions);
  });

  function decode(
    spec: TopicSpec<R>,
    topic: string,
    partition: number,
    message: KafkaMessage,
  ): ConsumedEvent<R> | undefined {
    try {
      if (!message.value) throw new UndecodableEventError('empty record');
      return {
        topic,
        spec,
        partition,
        offset: message.offset,
        key: message.key?.toString() ?? null,
        record: spec.codec.decode(message.value),
      };
    } catch (error) {
      if (!(error instanceof UndecodableEventError)) throw error;
      // Not ours to understand (a newer producer's event, or garbage): skipping keeps the partition
      // moving; the metric and the log line say it happened.
      o.metrics?.undecodable.inc({ topic, group: o.groupId });
      log.warn(
        { topic, partition, offset: message.offset, reason: error.message },
        'skipped an undecodable record',
      );
      return undefined;
    }
  }

  async function handleWithRetry(events: ConsumedEvent<R>[], payload: EachBatchPayload): Promise<boolean> {
    const { batch } = payload;
    const active = () => payload.isRunning() && !payload.isStale();
    const context: BatchContext = {
      topic: batch.topic,
      partition: batch.partition,
      heartbeat: () => payload.heartbeat(),
      isRunning: active,
    };
    let delay = backoff.initial;
    for (let attempt = 1; ; attempt++) {
      const timer = o.metrics?.handlerSeconds.startTimer({ topic: batch.topic, group: o.groupId });
      try {
        await o.handleBatch(events, context);
        timer?.();
        return true;
      } catch (error) {
        o.metrics?.handlerFailures.inc({ topic: batch.topic, group: o.groupId });
        log.error(
          {
            err: error,
            topic: batch.topic,
            partition: batch.partition,
            firstOffset: events[0]?.offset,
            attempt,
          },
          'handler failed; the batch will be retried',
        );
      }
      const until = Date.now() + delay;
      while (Date.now() < until) {
        if (!active()) return false;
        // A rebalance (or a lost membership) shows here as an error: it goes up to kafkajs, which rejoins.
        // Swallowed, it would hold the whole group's rebalance up for its timeout while this member kept
        // retrying a batch whose partition may be another's by then. The batch is not resolved: it comes
        // again, to whoever owns the partition.
        await payload.heartbeat();
        await sleep(Math.min(500, until - Date.now()));
      }
      delay = Math.min(backoff.max, delay * 2);
    }
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    const spec = byName.get(batch.topic);
    if (!spec) throw new Error(`consumer got a record of undeclared topic ${batch.topic}`);
    for (const chunk of chunks(batch.messages, maxBatchSize)) {
      if (!payload.isRunning() || payload.isStale()) return;
      const events = chunk.flatMap((m) => decode(spec, batch.topic, batch.partition, m) ?? []);
      if (events.length > 0 && !(await handleWithRetry(events, payload))) return;
      const last = chunk[chunk.length - 1]!;
      payload.resolveOffset(last.offset);
      // Through the batch payload: unlike consumer.commitOffsets, it still commits while the consumer is
      // stopping, so a clean stop keeps what the last handled chunk did.
      await payload.commitOffsetsIfNecessary({
        topics: [
          {
            topic: batch.topic,
            partitions: [{ partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() }],
          },
        ],
      });
      for (const e of events)
        o.metrics?.consumed.inc({ topic: batch.topic, type: e.record.metadata.type, group: o.groupId });
      o.onCommitted?.(batch.topic, batch.partition, BigInt(last.offset) + 1n);
      await payload.heartbeat();
    }
  }

  async function connectAndRun(): Promise<void> {
    await consumer.connect();
    await consumer.subscribe({ topics: [...byName.keys()], fromBeginning: o.fromBeginning ?? true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: o.partitionsConsumedConcurrently ?? 1,
      eachBatch,
    });
  }

  /** Starts the consumer again after 1, 2, 4 ... 30 s, until it runs or the service stops. */
  function startAgainLater(): void {
    clearTimeout(restartTimer);
    const delay = Math.min(30_000, 1_000 * 2 ** Math.min(restarts++, 5));
    log.warn({ inMs: delay }, 'starting the consumer again');
    restartTimer = setTimeout(() => {
      if (!running) return;
      connectAndRun().catch((error: unknown) => {
        log.error({ err: error }, 'could not start the consumer again');
        if (running) startAgainLater();
      });
    }, delay);
  }

  return {
    async start() {
      running = true;
      const firstJoin = new Promise<void>((resolve, reject) => {
        joined = resolve;
        cancelJoin = reject;
      });
      await connectAndRun();
      // A broker that takes partitions but never completes the join would hang start-up: give up instead,
      // so the service exits and its supervisor starts it again.
      let timer: NodeJS.Timeout | undefined;
      const gaveUp = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(
          () => reject(new Error(`consumer group ${o.groupId} not joined within 60 s`)),
          60_000,
        );
      });
      try {
        await Promise.race([firstJoin, gaveUp]);
      } finally {
        clearTimeout(timer);
      }
    },
    async stop() {
      if (!running) return;
      running = false;
      clearTimeout(restartTimer);
      cancelJoin?.(new Error(`consumer group ${o.groupId} stopped before it joined`));
      await consumer.disconnect();
    },
    healthy: () => running && inGroup,
  };
}
