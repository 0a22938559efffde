import { backoffDelays } from '@mds/async';
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
  return new GroupConsumer(o);
}

class GroupConsumer<R extends StreamRecord> implements EventConsumer {
  private readonly byName: Map<string, TopicSpec<R>>;
  private readonly maxBatchSize: number;
  private readonly backoff: { initial: number; max: number };
  private readonly minFetchIntervalMs: number;
  private readonly maxDeferred: number;
  private readonly log: Logger;
  private readonly consumer: Consumer;
  private running = false;
  private inGroup = false;
  private joined: (() => void) | undefined;
  private cancelJoin: ((error: Error) => void) | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private commitTimer: NodeJS.Timeout | undefined;
  /** Waits before starting a crashed consumer again: 1, 2, 4 ... 30 s; afresh once it joins. */
  private restartDelay = backoffDelays(1_000, 30_000);
  private tracker = new OffsetTracker();
  /** Per partition, the end of the log at this generation's first fetch from it. */
  private firstEnds = new Map<string, bigint>();
  private readonly paused = new Set<string>();
  private arrived: Arrived<R>[] = [];
  private handOverScheduled = false;
  private inHand: Promise<void> = Promise.resolve();
  private lastFetchStartedAt = 0;
  /** Commits through kafkajs's consumer group (it works while stopping, unlike consumer.commitOffsets). */
  private commitThroughGroup: EachBatchPayload['commitOffsetsIfNecessary'] | undefined;
  private committing: Promise<void> | undefined;

  constructor(private readonly o: EventConsumerOptions<R>) {
    this.byName = new Map(o.topics.map((spec) => [topicName(spec, o.topicPrefix), spec]));
    this.maxBatchSize = o.maxBatchSize ?? 1_000;
    this.backoff = o.retryBackoffMs ?? { initial: 200, max: 30_000 };
    this.minFetchIntervalMs = o.minFetchIntervalMs ?? 0;
    this.maxDeferred = o.maxDeferredPerPartition ?? 10_000;
    this.log = o.logger.child({ consumerGroup: o.groupId });
    this.consumer = o.kafka.consumer({
      groupId: o.groupId,
      sessionTimeout: o.sessionTimeoutMs ?? 10_000,
      heartbeatInterval: 3_000,
      allowAutoTopicCreation: false,
      readUncommitted: false,
      maxWaitTimeInMs: o.maxWaitTimeMs ?? 500,
      minBytes: 1,
    });
    this.followGroup();
  }

  async start(): Promise<void> {
    this.running = true;
    const firstJoin = new Promise<void>((resolve, reject) => {
      this.joined = resolve;
      this.cancelJoin = reject;
    });
    this.commitTimer = setInterval(() => void this.commitHandled(), this.o.commitIntervalMs ?? 1_000);
    await this.connectAndRun();
    // A broker that takes partitions but never completes the join would hang start-up: give up instead,
    // so the service exits and its supervisor starts it again.
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`consumer group ${this.o.groupId} not joined within 60 s`)),
        60_000,
      );
    });
    try {
      await Promise.race([firstJoin, gaveUp]);
    } finally {
      clearTimeout(timer);
    }
  }

  async stop(options?: { drainMs?: number }): Promise<void> {
    if (!this.running) return;
    this.running = false;
    clearTimeout(this.restartTimer);
    clearInterval(this.commitTimer);
    this.cancelJoin?.(new Error(`consumer group ${this.o.groupId} stopped before it joined`));
    await this.inHand;
    const drainUntil = Date.now() + (options?.drainMs ?? 0);
    while (this.tracker.totalDeferred() > 0 && Date.now() < drainUntil) await sleep(20);
    await this.commitHandled();
    await this.consumer.disconnect();
  }

  healthy(): boolean {
    return this.running && this.inGroup;
  }

  private followGroup(): void {
    const { consumer, o } = this;
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      this.inGroup = true;
      this.restartDelay = backoffDelays(1_000, 30_000);
      // A new generation: every uncommitted record comes again from the committed offsets.
      this.tracker = new OffsetTracker();
      this.firstEnds = new Map();
      if (this.paused.size > 0) {
        consumer.resume(
          [...this.paused].map((key) => JSON.parse(key) as { topic: string; partitions: number[] }),
        );
        this.paused.clear();
      }
      this.log.info({ assignment: e.payload.memberAssignment }, 'joined consumer group');
      o.onAssignment?.(new Map(Object.entries(e.payload.memberAssignment)));
      this.joined?.();
    });
    consumer.on(consumer.events.REBALANCING, () => o.onAssignment?.(NO_PARTITIONS));
    consumer.on(consumer.events.FETCH_START, () => {
      this.lastFetchStartedAt = Date.now();
      o.metrics?.fetches.inc({ group: o.groupId });
    });
    consumer.on(consumer.events.CRASH, (e) => {
      this.inGroup = false;
      o.onAssignment?.(NO_PARTITIONS);
      this.log.error({ err: e.payload.error, restart: e.payload.restart }, 'consumer crashed');
      // kafkajs starts the consumer again only after errors it deems retriable; after any other it stays
      // disconnected for good, and the service would stay unready until someone restarted it.
      if (!e.payload.restart && this.running) this.startAgainLater();
    });
    consumer.on(consumer.events.STOP, () => {
      this.inGroup = false;
      o.onAssignment?.(NO_PARTITIONS);
    });
  }

  private async connectAndRun(): Promise<void> {
    await this.consumer.connect();
    await this.consumer.subscribe({
      topics: [...this.byName.keys()],
      fromBeginning: this.o.fromBeginning ?? true,
    });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: BATCHES_IN_HAND,
      eachBatch: (payload) => this.eachBatch(payload),
    });
  }

  /** Starts the consumer again after 1, 2, 4 ... 30 s, until it runs or the service stops. */
  private startAgainLater(): void {
    clearTimeout(this.restartTimer);
    const delay = this.restartDelay();
    this.log.warn({ inMs: delay }, 'starting the consumer again');
    this.restartTimer = setTimeout(() => {
      if (!this.running) return;
      this.connectAndRun().catch((error: unknown) => {
        this.log.error({ err: error }, 'could not start the consumer again');
        if (this.running) this.startAgainLater();
      });
    }, delay);
  }

  private async eachBatch(payload: EachBatchPayload): Promise<void> {
    if (!this.running) return;
    const { batch } = payload;
    const spec = this.byName.get(batch.topic);
    if (!spec) throw new Error(`consumer got a record of undeclared topic ${batch.topic}`);
    // An arrow function of kafkajs's runner, bound to its consumer group (the same across generations).
    this.commitThroughGroup = (offsets) => payload.commitOffsetsIfNecessary(offsets);
    const key = `${batch.topic}/${batch.partition}`;
    if (!this.firstEnds.has(key)) this.firstEnds.set(key, BigInt(batch.highWatermark));
    const newFrom = this.firstEnds.get(key)!;
    const events: ConsumedEvent<R>[] = [];
    const undecodable: UndecodableRecord[] = [];
    for (const message of batch.messages) {
      const decoded = decodeRecord(spec, batch.topic, batch.partition, message, newFrom);
      if ('event' in decoded) events.push(decoded.event);
      else this.setAside(decoded.undecodable, undecodable);
    }
    const last = batch.messages[batch.messages.length - 1];
    if (!last) return;
    // Resolves once handed over; rejects when a heartbeat showed a rebalance (kafkajs then rejoins).
    await new Promise<void>((resolve, reject) => {
      this.arrived.push({
        payload,
        topic: batch.topic,
        partition: batch.partition,
        events,
        undecodable,
        nextOffset: BigInt(last.offset) + 1n,
        done: (error) => (error ? reject(error) : resolve()),
      });
      this.scheduleHandOver();
    });
  }

  /** Not ours to understand (a newer producer's event, or garbage): set aside, it keeps the partition moving. */
  private setAside(record: UndecodableRecord, into: UndecodableRecord[]): void {
    this.o.metrics?.undecodable.inc({ topic: record.topic, group: this.o.groupId });
    into.push(record);
    const { topic, partition, offset, reason } = record;
    this.log.warn({ topic, partition, offset, reason }, 'skipped an undecodable record');
  }

  private scheduleHandOver(): void {
    if (this.handOverScheduled) return;
    this.handOverScheduled = true;
    // kafkajs starts every batch of a fetch in the same turn of the event loop: gather them, then hand over.
    setImmediate(() => {
      this.handOverScheduled = false;
      const batches = this.arrived;
      this.arrived = [];
      this.inHand = this.inHand.then(async () => {
        let error: Error | undefined;
        try {
          await this.handOver(batches);
        } catch (e) {
          error = e instanceof Error ? e : new Error(String(e));
        }
        // A pause between fetches lets records that trickle in meanwhile come together in the next one.
        const wait = this.lastFetchStartedAt + this.minFetchIntervalMs - Date.now();
        if (wait > 0 && this.running && error === undefined) await sleep(wait);
        for (const b of batches) b.done(error);
      });
    });
  }

  /** Hands everything that arrived together to the handler, in chunks of at most maxBatchSize events. */
  private async handOver(batches: Arrived<R>[]): Promise<void> {
    const undecodable = batches.flatMap((b) => b.undecodable);
    const setAside = this.o.onUndecodable;
    if (undecodable.length > 0 && setAside) {
      if (!(await this.handleWithRetry(batches, () => setAside(undecodable)))) return;
    }
    const events = batches.flatMap((b) => b.events);
    for (let i = 0; i < events.length; i += this.maxBatchSize) {
      const chunk = events.slice(i, i + this.maxBatchSize);
      if (!(await this.handleWithRetry(batches, (context) => this.o.handleBatch(chunk, context)))) return;
      const next = new Map<string, { topic: string; partition: number; offset: bigint }>();
      for (const e of chunk) {
        next.set(`${e.topic}/${e.partition}`, {
          topic: e.topic,
          partition: e.partition,
          offset: BigInt(e.offset) + 1n,
        });
      }
      for (const p of next.values()) this.tracker.handled(p.topic, p.partition, p.offset);
    }
    for (const b of batches) {
      // The next fetch starts after it (kafkajs keeps the fetch position; the commit position is ours).
      b.payload.resolveOffset((b.nextOffset - 1n).toString());
      // Records after the last decodable one (skipped) are handled too.
      this.tracker.handled(b.topic, b.partition, b.nextOffset);
      this.countConsumed(b.topic, b.events);
      this.o.onHandled?.(b.topic, b.partition, b.nextOffset);
    }
    if (!this.running) await this.commitHandled();
    else await this.heartbeatOf(batches[0]!.payload);
  }

  /** Runs the work until it succeeds (true), or until the batches are no longer this member's to handle. */
  private async handleWithRetry(
    batches: Arrived<R>[],
    work: (context: BatchContext) => Promise<void>,
  ): Promise<boolean> {
    const payload = batches[0]!.payload;
    const active = () => this.running && batches.every((b) => !b.payload.isStale());
    const context: BatchContext = {
      heartbeat: () => this.heartbeatOf(payload),
      isRunning: active,
      defer: (event) => this.defer(event),
    };
    const labels = { topic: batches[0]!.topic, group: this.o.groupId };
    const nextDelay = backoffDelays(this.backoff.initial, this.backoff.max);
    for (;;) {
      const timer = this.o.metrics?.handlerSeconds.startTimer(labels);
      try {
        await work(context);
        timer?.();
        return true;
      } catch (error) {
        this.o.metrics?.handlerFailures.inc(labels);
        this.log.error(
          { err: error, partitions: batches.map((b) => `${b.topic}/${b.partition}`) },
          'handler failed; the batch will be retried',
        );
      }
      const until = Date.now() + nextDelay();
      while (Date.now() < until) {
        if (!active()) return false;
        // A rebalance (or a lost membership) shows here as an error: it goes up to kafkajs, which rejoins.
        // Swallowed, it would hold the whole group's rebalance up for its timeout while this member kept
        // retrying events whose partitions may be another's by then. They come again to their owner.
        await this.heartbeatOf(payload);
        await sleep(Math.min(500, until - Date.now()));
      }
    }
  }

  private defer(event: ConsumedEvent): () => void {
    const owner = this.tracker;
    const offset = BigInt(event.offset);
    const { topic, partition } = event;
    owner.defer(topic, partition, offset);
    const key = JSON.stringify({ topic, partitions: [partition] });
    if (owner.deferredCount(topic, partition) >= this.maxDeferred && !this.paused.has(key)) {
      this.paused.add(key);
      this.consumer.pause([{ topic, partitions: [partition] }]);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      owner.release(topic, partition, offset);
      const fewEnough = owner.deferredCount(topic, partition) < this.maxDeferred / 2;
      if (owner === this.tracker && this.paused.has(key) && fewEnough) {
        this.paused.delete(key);
        this.consumer.resume([{ topic, partitions: [partition] }]);
      }
    };
  }

  private async heartbeatOf(payload: EachBatchPayload): Promise<void> {
    try {
      await payload.heartbeat();
    } catch (error) {
      // Leaving the generation: commit what is handled first, so the next owner does not do it again.
      await this.commitHandled();
      throw error;
    }
  }

  /** Commits every position that moved; one at a time. */
  private commitHandled(): Promise<void> {
    if (this.committing || this.o.commitOffsets === false) return this.committing ?? Promise.resolve();
    const positions = this.tracker.toCommit();
    const commit = this.commitThroughGroup;
    if (positions.length === 0 || !commit) return Promise.resolve();
    const forTracker = this.tracker;
    const byTopic = new Map<string, { partition: number; offset: string }[]>();
    for (const p of positions) {
      const list = byTopic.get(p.topic) ?? [];
      list.push({ partition: p.partition, offset: p.offset.toString() });
      byTopic.set(p.topic, list);
    }
    this.committing = commit({ topics: [...byTopic].map(([topic, partitions]) => ({ topic, partitions })) })
      .then(() => {
        forTracker.committed(positions);
        this.o.metrics?.commits.inc({ group: this.o.groupId });
      })
      .catch((error: unknown) => {
        // A rebalance took the partitions meanwhile: their records come again to the new owner.
        this.log.debug({ err: error }, 'could not commit offsets');
      })
      .finally(() => {
        this.committing = undefined;
      });
    return this.committing;
  }

  private countConsumed(topic: string, events: ConsumedEvent<R>[]): void {
    if (!this.o.metrics) return;
    const byType = new Map<string, number>();
    for (const e of events) byType.set(e.record.metadata.type, (byType.get(e.record.metadata.type) ?? 0) + 1);
    for (const [type, n] of byType) this.o.metrics.consumed.inc({ topic, type, group: this.o.groupId }, n);
  }
}

const NO_PARTITIONS = new Map<string, number[]>();

function decodeRecord<R extends StreamRecord>(
  spec: TopicSpec<R>,
  topic: string,
  partition: number,
  message: KafkaMessage,
  newFrom: bigint,
): { event: ConsumedEvent<R> } | { undecodable: UndecodableRecord } {
  const key = message.key?.toString() ?? null;
  try {
    if (!message.value) throw new UndecodableEventError('empty record');
    const record = spec.codec.decode(message.value);
    const redelivery = BigInt(message.offset) < newFrom;
    return { event: { topic, spec, partition, offset: message.offset, key, record, redelivery } };
  } catch (error) {
    if (!(error instanceof UndecodableEventError)) throw error;
    const { offset, value: payload } = message;
    return { undecodable: { topic, partition, offset, key, payload, reason: error.message } };
  }
}
