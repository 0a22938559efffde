import { backoffDelays } from '@mds/async';
import { UndecodableEventError, type StreamRecord, type TopicSpec } from '@mds/contracts';
import type { Logger } from '@mds/logging';
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import type { CommitManager } from './consumer-offsets.js';
import type { BatchContext, ConsumedEvent, EventConsumerOptions, UndecodableRecord } from './consumer.js';

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
 * The consumer's runner: gathers the batches one fetch brings, decodes them, hands them to the handler
 * together (retrying until it succeeds or the partitions are no longer this member's), and then tells the
 * offset manager what is handled.
 */
export class BatchRunner<R extends StreamRecord> {
  private readonly byName: Map<string, TopicSpec<R>>;
  private readonly maxBatchSize: number;
  private readonly backoff: { initial: number; max: number };
  private readonly minFetchIntervalMs: number;
  /** Per partition, the end of the log at this generation's first fetch from it. */
  private firstEnds = new Map<string, bigint>();
  private arrived: Arrived<R>[] = [];
  private handOverScheduled = false;
  private inHand: Promise<void> = Promise.resolve();
  private lastFetchStartedAt = 0;

  constructor(
    private readonly o: EventConsumerOptions<R>,
    byName: Map<string, TopicSpec<R>>,
    private readonly offsets: CommitManager,
    private readonly log: Logger,
    private readonly isRunning: () => boolean,
  ) {
    this.byName = byName;
    this.maxBatchSize = o.maxBatchSize ?? 1_000;
    this.backoff = o.retryBackoffMs ?? { initial: 200, max: 30_000 };
    this.minFetchIntervalMs = o.minFetchIntervalMs ?? 0;
  }

  /** A new generation: which records are new to the group is measured afresh. */
  newGeneration(): void {
    this.firstEnds = new Map();
  }

  fetchStarted(): void {
    this.lastFetchStartedAt = Date.now();
  }

  /** Resolves once the batch in hand (if any) is handled or given up. */
  settled(): Promise<void> {
    return this.inHand;
  }

  async eachBatch(payload: EachBatchPayload): Promise<void> {
    if (!this.isRunning()) return;
    const { batch } = payload;
    const spec = this.byName.get(batch.topic);
    if (!spec) throw new Error(`consumer got a record of undeclared topic ${batch.topic}`);
    this.offsets.commitThrough(payload);
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
        if (wait > 0 && this.isRunning() && error === undefined) await sleep(wait);
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
      for (const p of next.values()) this.offsets.handled(p.topic, p.partition, p.offset);
    }
    for (const b of batches) {
      // The next fetch starts after it (kafkajs keeps the fetch position; the commit position is ours).
      b.payload.resolveOffset((b.nextOffset - 1n).toString());
      // Records after the last decodable one (skipped) are handled too.
      this.offsets.handled(b.topic, b.partition, b.nextOffset);
      this.countConsumed(b.topic, b.events);
      this.o.onHandled?.(b.topic, b.partition, b.nextOffset);
    }
    if (!this.isRunning()) await this.offsets.commitHandled();
    else await this.heartbeatOf(batches[0]!.payload);
  }

  /** Runs the work until it succeeds (true), or until the batches are no longer this member's to handle. */
  private async handleWithRetry(
    batches: Arrived<R>[],
    work: (context: BatchContext) => Promise<void>,
  ): Promise<boolean> {
    const payload = batches[0]!.payload;
    const active = () => this.isRunning() && batches.every((b) => !b.payload.isStale());
    const context: BatchContext = {
      heartbeat: () => this.heartbeatOf(payload),
      isRunning: active,
      defer: (event) => this.offsets.defer(event),
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

  private async heartbeatOf(payload: EachBatchPayload): Promise<void> {
    try {
      await payload.heartbeat();
    } catch (error) {
      // Leaving the generation: commit what is handled first, so the next owner does not do it again.
      await this.offsets.commitHandled();
      throw error;
    }
  }

  private countConsumed(topic: string, events: ConsumedEvent<R>[]): void {
    if (!this.o.metrics) return;
    const byType = new Map<string, number>();
    for (const e of events) byType.set(e.record.metadata.type, (byType.get(e.record.metadata.type) ?? 0) + 1);
    for (const [type, n] of byType) this.o.metrics.consumed.inc({ topic, type, group: this.o.groupId }, n);
  }
}

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
