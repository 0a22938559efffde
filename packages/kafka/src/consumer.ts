// The consumer, split as kafkajs splits its own: the group membership here (joining, restarting after a
// crash, stopping), the runner that hands fetched batches to the handler (consumer-runner.ts), and the
// offset manager that commits what is handled (consumer-offsets.ts).
import { backoffDelays } from '@mds/async';
import type { Complete, StreamRecord, TopicSpec } from '@mds/contracts';
import type { Logger } from '@mds/logging';
import type { Consumer, Kafka } from 'kafkajs';
import { LagReporter } from './consumer-lag-reporter.js';
import type { PartitionLag } from './consumer-lag.js';
import { CommitManager } from './consumer-offsets.js';
import { BatchRunner } from './consumer-runner.js';
import { clientWithOwnSockets } from './client.js';
import type { DeadLetterSink } from './dead-letters.js';
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
  /**
   * The record was in the log before this member took its partition (below the end of the partition at
   * the first fetch since): a member before it may have handled it already. Later records are new to the
   * group, so a handler may skip looking up whether it saw them.
   */
  redelivery: boolean;
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
   * order. Their offsets are committed only after this resolves (and deferred events are done). If it
   * throws, the events come again: the same ones while the failure is transient (the database or broker
   * away), else in smaller parts down to the record that fails alone, which is set aside (`deadLetters`);
   * so effects must be idempotent (dedupe by metadata.eventId with the state). Throw RefusedRecordError
   * for content the handler refuses, to have it set aside at once.
   */
  handleBatch(events: ConsumedEvent<R>[], context: BatchContext): Promise<void>;
  /**
   * Where the records this group cannot decode or handle go before the partition moves past them: the
   * service's `dead_letters` table (`deadLetterTable(db)` of @mds/db), or NO_DEAD_LETTER_TABLE for a group
   * that keeps nothing of its own (they are logged and counted either way).
   */
  deadLetters: DeadLetterSink;
  /**
   * The partitions this member owns, by topic name: called with an empty map when a rebalance begins
   * (kafkajs revokes everything first) or the consumer stops, and with the new assignment once joined.
   */
  onAssignment?: (partitions: ReadonlyMap<string, readonly number[]>) => void;
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
   * How long an idle fetch waits for a first record: 3 s (500 ms with a client not made by
   * createKafkaClient). A fetch answers as soon as any record is there, so a long wait costs no latency; it
   * bounds how often an idle member asks (each fetch names every partition it owns, and kafkajs heartbeats
   * between fetches, so at most the heartbeat interval). stop() cuts a waiting fetch short.
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
  /** Tries of a chunk failing for a reason neither transient nor the records' before it is split (3). */
  attemptsBeforeIsolating?: number;
  /**
   * Records set aside in a row with none handled between them (5), after which the group stops setting
   * aside and waits: every record failing alone is the handler's fault or its store's, not the records'.
   */
  maxSetAsideInARow?: number;
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
  /** How far behind this member is on each partition it owns (what `mds_consumer_lag_*` export). */
  lag(): PartitionLag[];
}

/** kafkajs heartbeats between fetches, at most this often. */
const HEARTBEAT_INTERVAL_MS = 3_000;
/** An idle fetch waits this long at the broker: as long as kafkajs's heartbeats wait anyway. */
const IDLE_FETCH_WAIT_MS = HEARTBEAT_INTERVAL_MS;

/** More than the partitions one member can be handed by one fetch: every batch of a fetch is in hand at once. */
const BATCHES_IN_HAND = 512;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  private readonly log: Logger;
  private readonly consumer: Consumer;
  /** Ends the consumer's connections: a stop need not wait for the broker to answer an idle fetch. */
  private readonly cutFetchShort: () => void;
  private readonly offsets: CommitManager;
  private readonly runner: BatchRunner<R>;
  private readonly lagReporter: LagReporter;
  private running = false;
  private inGroup = false;
  /** kafkajs announced a rebalance (REBALANCING) and has not joined since (GROUP_JOIN). */
  private rejoinAnnounced = false;
  /** Fetching in a generation whose partitions the service was told it no longer holds: nothing is handled. */
  private staleGeneration = false;
  private joined: (() => void) | undefined;
  private cancelJoin: ((error: Error) => void) | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private commitTimer: NodeJS.Timeout | undefined;
  /** Waits before starting a crashed consumer again: 1, 2, 4 ... 30 s; afresh once it joins. */
  private restartDelay = backoffDelays(1_000, 30_000);

  constructor(private readonly o: EventConsumerOptions<R>) {
    this.byName = new Map(o.topics.map((spec) => [topicName(spec, o.topicPrefix), spec]));
    this.log = o.logger.child({ consumerGroup: o.groupId });
    const own = clientWithOwnSockets(o.kafka);
    this.cutFetchShort = own?.closeSockets ?? (() => undefined);
    this.consumer = (own?.kafka ?? o.kafka).consumer({
      groupId: o.groupId,
      sessionTimeout: o.sessionTimeoutMs ?? 10_000,
      heartbeatInterval: HEARTBEAT_INTERVAL_MS,
      allowAutoTopicCreation: false,
      readUncommitted: false,
      maxWaitTimeInMs: o.maxWaitTimeMs ?? (own ? IDLE_FETCH_WAIT_MS : 500),
      minBytes: 1,
    });
    this.offsets = new CommitManager({
      consumer: this.consumer,
      groupId: o.groupId,
      log: this.log,
      ...(o.metrics ? { metrics: o.metrics } : {}),
      ...(o.commitOffsets === undefined ? {} : { commitOffsets: o.commitOffsets }),
      maxDeferred: o.maxDeferredPerPartition ?? 10_000,
    });
    this.lagReporter = new LagReporter({
      kafka: o.kafka,
      groupId: o.groupId,
      log: this.log,
      metrics: o.metrics,
    });
    this.runner = new BatchRunner(
      o,
      this.byName,
      this.offsets,
      this.lagReporter.tracker,
      this.log,
      () => this.running,
    );
    this.followGroup();
  }

  async start(): Promise<void> {
    this.running = true;
    const firstJoin = new Promise<void>((resolve, reject) => {
      this.joined = resolve;
      this.cancelJoin = reject;
    });
    this.commitTimer = setInterval(() => void this.offsets.commitHandled(), this.o.commitIntervalMs ?? 1_000);
    this.lagReporter.start();
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
    await this.lagReporter.stop();
    this.cancelJoin?.(new Error(`consumer group ${this.o.groupId} stopped before it joined`));
    await this.runner.settled();
    const drainUntil = Date.now() + (options?.drainMs ?? 0);
    while (this.offsets.totalDeferred() > 0 && Date.now() < drainUntil) await sleep(20);
    await this.offsets.commitHandled();
    // kafkajs would wait for the fetch in flight, which an idle broker holds for up to its whole wait: the
    // fetch fails as the connections close, and leaving the group opens a connection anew.
    this.cutFetchShort();
    await this.consumer.disconnect();
  }

  healthy(): boolean {
    return this.running && this.inGroup;
  }

  lag(): PartitionLag[] {
    return this.lagReporter.tracker.snapshot();
  }

  /** The partitions this member owns now (none while rebalancing): the service's hook, and the lag's. */
  private assigned(partitions: ReadonlyMap<string, readonly number[]>): void {
    this.lagReporter.tracker.assigned(partitions);
    this.o.onAssignment?.(partitions);
  }

  private followGroup(): void {
    const { consumer, o } = this;
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      this.inGroup = true;
      this.rejoinAnnounced = false;
      this.staleGeneration = false;
      this.restartDelay = backoffDelays(1_000, 30_000);
      // A new generation: every uncommitted record comes again from the committed offsets.
      this.offsets.newGeneration();
      this.runner.newGeneration();
      this.log.info({ assignment: e.payload.memberAssignment }, 'joined consumer group');
      this.assigned(new Map(Object.entries(e.payload.memberAssignment)));
      this.joined?.();
    });
    consumer.on(consumer.events.REBALANCING, () => {
      this.rejoinAnnounced = true;
      this.assigned(NO_PARTITIONS);
    });
    consumer.on(consumer.events.FETCH_START, () => {
      if (this.rejoinAnnounced) {
        this.rejoinAnnounced = false;
        this.staleGeneration = true;
        if (this.running) void this.joinAfresh();
      }
      if (this.staleGeneration) return;
      this.runner.fetchStarted();
      o.metrics?.fetches.inc({ group: o.groupId });
    });
    const client = `consumer:${o.groupId}`;
    consumer.on(consumer.events.REQUEST, (e) => o.metrics?.requests.inc({ client, api: e.payload.apiName }));
    consumer.on(consumer.events.CRASH, (e) => {
      this.inGroup = false;
      this.assigned(NO_PARTITIONS);
      this.log.error({ err: e.payload.error, restart: e.payload.restart }, 'consumer crashed');
      // kafkajs starts the consumer again only after errors it deems retriable; after any other it stays
      // disconnected for good, and the service would stay unready until someone restarted it.
      if (!e.payload.restart && this.running) this.startAgainLater();
    });
    consumer.on(consumer.events.STOP, () => {
      this.inGroup = false;
      this.assigned(NO_PARTITIONS);
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
      // Records fetched in a stale generation come again, to this member or another, after the join.
      eachBatch: (payload) => (this.staleGeneration ? Promise.resolve() : this.runner.eachBatch(payload)),
    });
  }

  /**
   * kafkajs fetches again with no join since it announced a rebalance: its rejoin gave up, and it goes on in
   * its old generation (see kafkajs-fixes.ts, 3), while the service was told it holds no partition. Its
   * records in hand (those after the committed positions) would wait for the next rebalance. The consumer
   * leaves the group and joins again: a new generation, from the committed positions.
   */
  private async joinAfresh(): Promise<void> {
    this.log.error(
      'kafkajs fetches again without having joined since the rebalance it announced; joining afresh',
    );
    this.inGroup = false;
    await this.offsets.commitHandled();
    await this.consumer
      .disconnect()
      .catch((error: unknown) => this.log.warn({ err: error }, 'could not leave the group'));
    if (this.running) this.startAgainLater();
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
}

const NO_PARTITIONS = new Map<string, number[]>();
