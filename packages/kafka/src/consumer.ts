import { UndecodableEventError, type Complete, type StreamRecord, type TopicSpec } from '@mds/contracts';
import type { Logger } from '@mds/logging';
import type { Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import type { KafkaMetrics } from './metrics.js';
import { OffsetTracker } from './offsets.js';
import { topicName } from './topics.js';

export interface ConsumedEvent<R extends StreamRecord = StreamRecord> {
  topic: string;
  /** The declared topic it came from (its base name tells which stream). */
  spec: TopicSpec<R>;
  partition: number;
  offset: string;
  key: string | null;
  record: Complete<R>;
  /**
   * The record was in the log before this member took its partition (below the end of the partition at
   * the first fetch since): a member before it may have handled it already. Later records are new to the
   * group, so a handler may skip looking up whether it saw them.
   */
  redelivery: boolean;
}

/** A record this build cannot decode (garbage, or an event type from a newer producer). */
export interface UndecodableRecord {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  payload: Buffer | null;
  reason: string;
}

export interface BatchContext {
  /**
   * Keeps this member in its group during long work. Rejects when the group is rebalancing or has dropped
   * this member: let that error go up (the events then come again to whoever owns their partitions).
   */
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping: finish up, do not start new work. */
  isRunning(): boolean;
  /**
   * Keeps an event open after handleBatch resolves: neither its offset nor any later one of its partition
   * is committed until the returned function is called (the handler finished it elsewhere, in its own
   * time). If the partition moves to another member meanwhile, the event comes again there.
   */
  defer(event: ConsumedEvent): () => void;
}

export interface EventConsumerOptions<R extends StreamRecord = StreamRecord> {
  kafka: Kafka;
  logger: Logger;
  groupId: string;
  topics: readonly TopicSpec<R>[];
  topicPrefix?: string;
  metrics?: KafkaMetrics;
  /**
   * Stores the effects of the events one fetch brought, from one or more partitions, each partition's in
   * order. Their offsets are committed only after this resolves (and deferred events are done); if it
   * throws, the same events are handed again (never skipped), so effects must be idempotent (dedupe by
   * metadata.eventId with the state).
   */
  handleBatch(events: ConsumedEvent<R>[], context: BatchContext): Promise<void>;
  /**
   * The partitions this member owns, by topic name: called with an empty map when a rebalance begins
   * (kafkajs revokes everything first) or the consumer stops, and with the new assignment once joined.
   */
  onAssignment?: (partitions: ReadonlyMap<string, readonly number[]>) => void;
  /**
   * Sets aside the records this build cannot decode (a dead-letter table), before the events around them
   * are handled; retried until it succeeds. Without it they are only logged and counted.
   */
  onUndecodable?: (records: UndecodableRecord[]) => Promise<void>;
  /** Called once the events of a partition before `nextOffset` are handled (deferred ones aside). */
  onHandled?: (topic: string, partition: number, nextOffset: bigint) => void;
  /** Events handed to one handleBatch call at most (a bigger fetch is handed over in several calls). */
  maxBatchSize?: number;
  /** A new group starts at the beginning of the log (rebuilding state) unless told otherwise. */
  fromBeginning?: boolean;
  /**
   * False for an observer of its own (a group per process, e.g. to keep a cache fresh): it commits nothing,
   * so its group leaves no trace once it stops, and a new one starts where fromBeginning says.
   */
  commitOffsets?: boolean;
  /**
   * How long the group waits for a silent member (a crashed process) before giving its partitions to
   * others. 10 s by default: a crashed replica's work resumes quickly; heartbeats go out every 3 s and
   * between batches, so only a handler stuck for 10 s loses its partitions (and then they come again).
   */
  sessionTimeoutMs?: number;
  /**
   * How long an idle fetch waits for a first record (500 ms). A fetch answers as soon as any record is
   * there, so this costs no latency; it bounds how often an idle member asks, and how long stop() waits.
   */
  maxWaitTimeMs?: number;
  /**
   * The least time between the starts of two fetches (0). Records that arrive meanwhile are handed over
   * together: a few milliseconds here turn a trickle of single events into batches (one transaction, one
   * produce for many) at the price of that much latency for the ones that wait.
   */
  minFetchIntervalMs?: number;
  /** Handled offsets are committed at most this often (1 s), and at once when the consumer stops. */
  commitIntervalMs?: number;
  /** Deferred events of one partition at most; fetching from it pauses until half of them are done. */
  maxDeferredPerPartition?: number;
  /** Backoff between retries of a failing batch. */
  retryBackoffMs?: { initial: number; max: number };
}

export interface EventConsumer {
  /** Joins the group and starts consuming; resolves once the first partitions are assigned. */
  start(): Promise<void>;
  /**
   * Stops fetching, lets the batch in hand finish, waits up to `drainMs` for deferred events to be done,
   * commits what was handled and leaves the group.
   */
  stop(options?: { drainMs?: number }): Promise<void>;
  /** True while the consumer is running and in its group. */
  healthy(): boolean;
}

/** More than the partitions one member can be handed by one fetch: every batch of a fetch is in hand at once. */
const BATCHES_IN_HAND = 512;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Arrived<R extends StreamRecord> {
  payload: EachBatchPayload;
  topic: string;
  partition: number;
  events: ConsumedEvent<R>[];
  undecodable: UndecodableRecord[];
  /** Offset after the batch's last record, decodable or not. */
  nextOffset: bigint;
  /** Lets kafkajs go on (to the next fetch, or with the error, to a rejoin). */
  done: (error?: Error) => void;
}

/**
 * A consumer whose offsets move only after the handler has stored the effects of the events before
 * them: a crash at any point means those events come again, never that they are lost. Everything one
 * fetch brings, from every partition, is handed to the handler at once, and offsets are committed on an
 * interval, so a handler's transaction and a commit are paid per fetch, not per partition or per event.
 */
export function createEventConsumer<R extends StreamRecord>(o: EventConsumerOptions<R>): EventConsumer {
  const byName = new Map(o.topics.map((spec) => [topicName(spec, o.topicPrefix), spec]));
  const maxBatchSize = o.maxBatchSize ?? 1_000;
  const backoff = o.retryBackoffMs ?? { initial: 200, max: 30_000 };
  const minFetchIntervalMs = o.minFetchIntervalMs ?? 0;
  const maxDeferred = o.maxDeferredPerPartition ?? 10_000;
  const log = o.logger.child({ consumerGroup: o.groupId });
  const consumer: Consumer = o.kafka.consumer({
    groupId: o.groupId,
    sessionTimeout: o.sessionTimeoutMs ?? 10_000,
    heartbeatInterval: 3_000,
    allowAutoTopicCreation: false,
    readUncommitted: false,
    maxWaitTimeInMs: o.maxWaitTimeMs ?? 500,
    minBytes: 1,
  });
  let running = false;
  let inGroup = false;
  let joined: (() => void) | undefined;
  let cancelJoin: ((error: Error) => void) | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  let commitTimer: NodeJS.Timeout | undefined;
  let restarts = 0;
  let tracker = new OffsetTracker();
  /** Per partition, the end of the log at this generation's first fetch from it. */
  let firstEnds = new Map<string, bigint>();
  const paused = new Set<string>();
  let arrived: Arrived<R>[] = [];
  let handOverScheduled = false;
  let inHand: Promise<void> = Promise.resolve();
  let lastFetchStartedAt = 0;
  /** Commits through kafkajs's consumer group (it works while stopping, unlike consumer.commitOffsets). */
  let commitThroughGroup: EachBatchPayload['commitOffsetsIfNecessary'] | undefined;
  let committing: Promise<void> | undefined;

  const noPartitions = new Map<string, number[]>();
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    inGroup = true;
    restarts = 0;
    // A new generation: every uncommitted record comes again from the committed offsets.
    tracker = new OffsetTracker();
    firstEnds = new Map();
    if (paused.size > 0) {
      consumer.resume([...paused].map((key) => JSON.parse(key) as { topic: string; partitions: number[] }));
      paused.clear();
    }
    log.info({ assignment: e.payload.memberAssignment }, 'joined consumer group');
    o.onAssignment?.(new Map(Object.entries(e.payload.memberAssignment)));
    joined?.();
  });
  consumer.on(consumer.events.REBALANCING, () => o.onAssignment?.(noPartitions));
  consumer.on(consumer.events.FETCH_START, () => {
    lastFetchStartedAt = Date.now();
    o.metrics?.fetches.inc({ group: o.groupId });
  });
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
    newFrom: bigint,
    undecodable: UndecodableRecord[],
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
        redelivery: BigInt(message.offset) < newFrom,
      };
    } catch (error) {
      if (!(error instanceof UndecodableEventError)) throw error;
      // Not ours to understand (a newer producer's event, or garbage): set aside, it keeps the partition
      // moving; the metric and the log line say it happened.
      o.metrics?.undecodable.inc({ topic, group: o.groupId });
      undecodable.push({
        topic,
        partition,
        offset: message.offset,
        key: message.key?.toString() ?? null,
        payload: message.value,
        reason: error.message,
      });
      log.warn(
        { topic, partition, offset: message.offset, reason: error.message },
        'skipped an undecodable record',
      );
      return undefined;
    }
  }

  /** Commits every position that moved; one at a time. */
  function commitHandled(): Promise<void> {
    if (committing || o.commitOffsets === false) return committing ?? Promise.resolve();
    const positions = tracker.toCommit();
    const commit = commitThroughGroup;
    if (positions.length === 0 || !commit) return Promise.resolve();
    const forTracker = tracker;
    const byTopic = new Map<string, { partition: number; offset: string }[]>();
    for (const p of positions) {
      const list = byTopic.get(p.topic) ?? [];
      list.push({ partition: p.partition, offset: p.offset.toString() });
      byTopic.set(p.topic, list);
    }
    committing = commit({ topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })) })
      .then(() => {
        forTracker.committed(positions);
        o.metrics?.commits.inc({ group: o.groupId });
      })
      .catch((error: unknown) => {
        // A rebalance took the partitions meanwhile: their records come again to the new owner.
        log.debug({ err: error }, 'could not commit offsets');
      })
      .finally(() => {
        committing = undefined;
      });
    return committing;
  }

  async function heartbeatOf(payload: EachBatchPayload): Promise<void> {
    try {
      await payload.heartbeat();
    } catch (error) {
      // Leaving the generation: commit what is handled first, so the next owner does not do it again.
      await commitHandled();
      throw error;
    }
  }

  function deferFor(event: ConsumedEvent): () => void {
    const owner = tracker;
    const offset = BigInt(event.offset);
    const { topic, partition } = event;
    owner.defer(topic, partition, offset);
    const key = JSON.stringify({ topic, partitions: [partition] });
    if (owner.deferredCount(topic, partition) >= maxDeferred && !paused.has(key)) {
      paused.add(key);
      consumer.pause([{ topic, partitions: [partition] }]);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      owner.release(topic, partition, offset);
      if (owner === tracker && paused.has(key) && owner.deferredCount(topic, partition) < maxDeferred / 2) {
        paused.delete(key);
        consumer.resume([{ topic, partitions: [partition] }]);
      }
    };
  }

  async function handleWithRetry(
    events: ConsumedEvent<R>[],
    batches: Arrived<R>[],
    work: (context: BatchContext) => Promise<void> = (context) => o.handleBatch(events, context),
  ): Promise<boolean> {
    const payload = batches[0]!.payload;
    const active = () => running && batches.every((b) => !b.payload.isStale());
    const context: BatchContext = {
      heartbeat: () => heartbeatOf(payload),
      isRunning: active,
      defer: deferFor,
    };
    const topic = batches[0]!.topic;
    let delay = backoff.initial;
    for (let attempt = 1; ; attempt++) {
      const timer = o.metrics?.handlerSeconds.startTimer({ topic, group: o.groupId });
      try {
        await work(context);
        timer?.();
        return true;
      } catch (error) {
        o.metrics?.handlerFailures.inc({ topic, group: o.groupId });
        log.error(
          { err: error, partitions: batches.map((b) => `${b.topic}/${b.partition}`), attempt },
          'handler failed; the batch will be retried',
        );
      }
      const until = Date.now() + delay;
      while (Date.now() < until) {
        if (!active()) return false;
        // A rebalance (or a lost membership) shows here as an error: it goes up to kafkajs, which rejoins.
        // Swallowed, it would hold the whole group's rebalance up for its timeout while this member kept
        // retrying events whose partitions may be another's by then. They come again to their owner.
        await heartbeatOf(payload);
        await sleep(Math.min(500, until - Date.now()));
      }
      delay = Math.min(backoff.max, delay * 2);
    }
  }

  function countConsumed(topic: string, events: ConsumedEvent<R>[]): void {
    if (!o.metrics) return;
    const byType = new Map<string, number>();
    for (const e of events) byType.set(e.record.metadata.type, (byType.get(e.record.metadata.type) ?? 0) + 1);
    for (const [type, n] of byType) o.metrics.consumed.inc({ topic, type, group: o.groupId }, n);
  }

  /** Hands everything that arrived together to the handler, in chunks of at most maxBatchSize events. */
  async function handOver(batches: Arrived<R>[]): Promise<void> {
    const undecodable = batches.flatMap((b) => b.undecodable);
    if (undecodable.length > 0 && o.onUndecodable) {
      const setAside = o.onUndecodable;
      const done = await handleWithRetry([], batches, () => setAside(undecodable));
      if (!done) return;
    }
    const events = batches.flatMap((b) => b.events);
    for (let i = 0; i < events.length; i += maxBatchSize) {
      const chunk = events.slice(i, i + maxBatchSize);
      if (!(await handleWithRetry(chunk, batches))) return;
      const next = new Map<Arrived<R>, bigint>();
      for (const e of chunk) {
        const batch = batches.find((b) => b.topic === e.topic && b.partition === e.partition)!;
        next.set(batch, BigInt(e.offset) + 1n);
      }
      for (const [batch, offset] of next) tracker.handled(batch.topic, batch.partition, offset);
    }
    for (const b of batches) {
      // The next fetch starts after it (kafkajs keeps the fetch position; the commit position is ours).
      b.payload.resolveOffset((b.nextOffset - 1n).toString());
      // Records after the last decodable one (skipped) are handled too.
      tracker.handled(b.topic, b.partition, b.nextOffset);
      countConsumed(b.topic, b.events);
      o.onHandled?.(b.topic, b.partition, b.nextOffset);
    }
    if (!running) await commitHandled();
    else await heartbeatOf(batches[0]!.payload);
  }

  function scheduleHandOver(): void {
    if (handOverScheduled) return;
    handOverScheduled = true;
    // kafkajs starts every batch of a fetch in the same turn of the event loop: gather them, then hand over.
    setImmediate(() => {
      handOverScheduled = false;
      const batches = arrived;
      arrived = [];
      inHand = inHand.then(async () => {
        let error: Error | undefined;
        try {
          await handOver(batches);
        } catch (e) {
          error = e instanceof Error ? e : new Error(String(e));
        }
        // A pause between fetches lets records that trickle in meanwhile come together in the next one.
        const wait = lastFetchStartedAt + minFetchIntervalMs - Date.now();
        if (wait > 0 && running && error === undefined) await sleep(wait);
        for (const b of batches) b.done(error);
      });
    });
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    if (!running) return;
    const { batch } = payload;
    const spec = byName.get(batch.topic);
    if (!spec) throw new Error(`consumer got a record of undeclared topic ${batch.topic}`);
    // An arrow function of kafkajs's runner, bound to its consumer group (the same across generations).
    commitThroughGroup = (offsets) => payload.commitOffsetsIfNecessary(offsets);
    const key = `${batch.topic}/${batch.partition}`;
    if (!firstEnds.has(key)) firstEnds.set(key, BigInt(batch.highWatermark));
    const newFrom = firstEnds.get(key)!;
    const undecodable: UndecodableRecord[] = [];
    const events = batch.messages.flatMap(
      (m) => decode(spec, batch.topic, batch.partition, m, newFrom, undecodable) ?? [],
    );
    const last = batch.messages[batch.messages.length - 1];
    if (!last) return;
    // Resolves once handed over; rejects when a heartbeat showed a rebalance (kafkajs then rejoins).
    await new Promise<void>((resolve, reject) => {
      arrived.push({
        payload,
        topic: batch.topic,
        partition: batch.partition,
        events,
        undecodable,
        nextOffset: BigInt(last.offset) + 1n,
        done: (error) => (error ? reject(error) : resolve()),
      });
      scheduleHandOver();
    });
  }

  async function connectAndRun(): Promise<void> {
    await consumer.connect();
    await consumer.subscribe({ topics: [...byName.keys()], fromBeginning: o.fromBeginning ?? true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: BATCHES_IN_HAND,
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
      commitTimer = setInterval(() => void commitHandled(), o.commitIntervalMs ?? 1_000);
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
    async stop(options) {
      if (!running) return;
      running = false;
      clearTimeout(restartTimer);
      clearInterval(commitTimer);
      cancelJoin?.(new Error(`consumer group ${o.groupId} stopped before it joined`));
      await inHand;
      const drainUntil = Date.now() + (options?.drainMs ?? 0);
      while (tracker.totalDeferred() > 0 && Date.now() < drainUntil) await sleep(20);
      await commitHandled();
      await consumer.disconnect();
    },
    healthy: () => running && inGroup,
  };
}
