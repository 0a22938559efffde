import { backoffDelays } from '@mds/async';
import { UndecodableEventError, type StreamRecord, type TopicSpec } from '@mds/contracts';
import { errorSummary, type Logger } from '@mds/logging';
import type { EachBatchPayload, KafkaMessage } from 'kafkajs';
import { LOST, PoisonIsolation, type IsolationPorts, type Refused } from './consumer-isolation.js';
import type { LagTracker } from './consumer-lag.js';
import type { CommitManager } from './consumer-offsets.js';
import type { BatchContext, ConsumedEvent, EventConsumerOptions } from './consumer.js';
import type { SetAsideRecord } from './dead-letters.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Arrived<R extends StreamRecord> {
  payload: EachBatchPayload;
  topic: string;
  partition: number;
  events: ConsumedEvent<R>[];
  undecodable: SetAsideRecord[];
  /** Offset after the batch's last record, decodable or not. */
  nextOffset: bigint;
  /** Lets kafkajs go on (to the next fetch, or with the error, to a rejoin). */
  done: (error?: Error) => void;
}

/**
 * The consumer's runner: gathers the batches one fetch brings, decodes them, hands them to the handler
 * together (through the poison isolation: a record it cannot handle is set aside, nothing else is skipped),
 * and then tells the offset manager and the lag tracker what is handled.
 */
export class BatchRunner<R extends StreamRecord> {
  private readonly byName: Map<string, TopicSpec<R>>;
  private readonly maxBatchSize: number;
  private readonly backoff: { initial: number; max: number };
  private readonly minFetchIntervalMs: number;
  private readonly isolation: PoisonIsolation<ConsumedEvent<R>>;
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
    private readonly lag: LagTracker,
    private readonly log: Logger,
    private readonly isRunning: () => boolean,
  ) {
    this.byName = byName;
    this.maxBatchSize = o.maxBatchSize ?? 1_000;
    this.backoff = o.retryBackoffMs ?? { initial: 200, max: 30_000 };
    this.minFetchIntervalMs = o.minFetchIntervalMs ?? 0;
    this.isolation = new PoisonIsolation({
      backoff: this.backoff,
      attempts: o.attemptsBeforeIsolating ?? 3,
      maxSetAsideInARow: o.maxSetAsideInARow ?? 5,
    });
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
    const undecodable: SetAsideRecord[] = [];
    for (const message of batch.messages) {
      const decoded = decodeRecord(spec, this.o.groupId, batch.topic, batch.partition, message, newFrom);
      if ('event' in decoded) events.push(decoded.event);
      else this.undecodable(decoded.undecodable, undecodable);
    }
    const first = batch.messages[0];
    const last = batch.messages[batch.messages.length - 1];
    if (!first || !last) return;
    this.lag.arrived(batch.topic, batch.partition, {
      highWatermark: BigInt(batch.highWatermark),
      firstOffset: BigInt(first.offset),
      firstAt: events[0]?.record.metadata.occurredAt?.getTime() ?? Number(first.timestamp),
    });
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
  private undecodable(record: SetAsideRecord, into: SetAsideRecord[]): void {
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
    if (undecodable.length > 0 && !(await this.setAside(batches, undecodable))) return;
    const events = batches.flatMap((b) => b.events);
    const ports = this.isolationPorts(batches);
    for (let i = 0; i < events.length; i += this.maxBatchSize) {
      const chunk = events.slice(i, i + this.maxBatchSize);
      const refused = await this.isolation.handle(chunk, ports);
      if (refused === LOST) return;
      if (refused.length > 0 && !(await this.setAside(batches, this.deadLetters(batches, refused)))) return;
      this.chunkHandled(chunk, events[i + chunk.length]);
    }
    for (const b of batches) {
      // The next fetch starts after it (kafkajs keeps the fetch position; the commit position is ours).
      b.payload.resolveOffset((b.nextOffset - 1n).toString());
      // Records after the last decodable one (skipped) are handled too.
      this.offsets.handled(b.topic, b.partition, b.nextOffset);
      this.lag.handled(b.topic, b.partition, b.nextOffset, undefined);
      this.countConsumed(b.topic, b.events);
      this.o.onHandled?.(b.topic, b.partition, b.nextOffset);
    }
    this.lag.settled();
    if (!this.isRunning()) await this.offsets.commitHandled();
    else await this.heartbeatOf(batches[0]!.payload);
  }

  /** Each partition's events are contiguous in a handover: only the chunk's last partition may go on. */
  private chunkHandled(chunk: ConsumedEvent<R>[], following: ConsumedEvent<R> | undefined): void {
    const last = new Map<string, ConsumedEvent<R>>();
    for (const e of chunk) last.set(`${e.topic}/${e.partition}`, e);
    for (const e of last.values()) {
      const next = BigInt(e.offset) + 1n;
      this.offsets.handled(e.topic, e.partition, next);
      const goesOn = following && following.topic === e.topic && following.partition === e.partition;
      this.lag.handled(
        e.topic,
        e.partition,
        next,
        e.record.metadata.occurredAt?.getTime(),
        goesOn ? following.record.metadata.occurredAt?.getTime() : undefined,
      );
    }
  }

  private isolationPorts(batches: Arrived<R>[]): IsolationPorts<ConsumedEvent<R>> {
    const payload = batches[0]!.payload;
    const active = () => this.isRunning() && batches.every((b) => !b.payload.isStale());
    const context: BatchContext = {
      heartbeat: () => this.heartbeatOf(payload),
      isRunning: active,
      defer: (event) => this.offsets.defer(event),
    };
    const labels = { topic: batches[0]!.topic, group: this.o.groupId };
    return {
      beforeTry: () => this.heartbeatOf(payload),
      handle: async (events) => {
        const timer = this.o.metrics?.handlerSeconds.startTimer(labels);
        await this.o.handleBatch(events, context);
        timer?.();
      },
      pause: (ms) => this.pause(ms, payload, active),
      failed: (events, error, { kind, whole }) => {
        this.o.metrics?.handlerFailures.inc(labels);
        // Narrowing a chunk down fails many parts of it: said for the chunk, and for each record alone.
        if (!whole && events.length > 1) return;
        const partitions = [...new Set(events.map((e) => `${e.topic}/${e.partition}`))];
        const next =
          kind === 'transient'
            ? 'waiting for it to come back, then the same events again'
            : events.length > 1
              ? 'narrowing it down to the records that fail'
              : 'the record is set aside unless the others fail too';
        this.log.error(
          { err: error, failure: kind, events: events.length, partitions, ...offsetOf(events) },
          `handler failed (${kind}); ${next}`,
        );
      },
      waitingOnSystemicFailure: (events, refused, inMs) => {
        this.log.error(
          {
            events: events.length,
            failedAlone: refused.length,
            reason: errorSummary(refused[0]?.error),
            inMs,
          },
          "every record failed alone: the fault is the handler's or its store's, not the records'; nothing is set aside, the events are tried again",
        );
      },
    };
  }

  /** The records the handler refused, as dead letters: their bytes as they are in the log, and why. */
  private deadLetters(batches: Arrived<R>[], refused: Refused<ConsumedEvent<R>>[]): SetAsideRecord[] {
    return refused.map(({ event, error }) => {
      const batch = batches.find((b) => b.topic === event.topic && b.partition === event.partition);
      const message = batch?.payload.batch.messages.find((m) => m.offset === event.offset);
      const reason = `refused: ${errorSummary(error)}`;
      this.o.metrics?.setAside.inc({ topic: event.topic, group: this.o.groupId });
      this.log.error(
        { err: error, topic: event.topic, partition: event.partition, offset: event.offset, reason },
        'set aside a record the handler could not handle; its partition goes on',
      );
      // A try that failed may have kept it open (context.defer): it is done with now.
      this.offsets.release(event.topic, event.partition, event.offset);
      return {
        group: this.o.groupId,
        topic: event.topic,
        partition: event.partition,
        offset: event.offset,
        key: event.key,
        payload: message?.value ?? null,
        reason,
      };
    });
  }

  /** Stores the records set aside, retried until it works; false once the batches are no longer ours. */
  private async setAside(batches: Arrived<R>[], records: SetAsideRecord[]): Promise<boolean> {
    const payload = batches[0]!.payload;
    const active = () => this.isRunning() && batches.every((b) => !b.payload.isStale());
    const nextDelay = backoffDelays(this.backoff.initial, this.backoff.max);
    for (;;) {
      try {
        await this.o.deadLetters.setAside(records);
        return true;
      } catch (error) {
        this.log.error({ err: error, records: records.length }, 'could not set records aside; retrying');
      }
      if (!(await this.pause(nextDelay(), payload, active))) return false;
    }
  }

  /** Waits, heartbeating; false once the batches are no longer this member's to handle. */
  private async pause(ms: number, payload: EachBatchPayload, active: () => boolean): Promise<boolean> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (!active()) return false;
      // A rebalance (or a lost membership) shows here as an error: it goes up to kafkajs, which rejoins.
      // Swallowed, it would hold the whole group's rebalance up for its timeout while this member kept
      // retrying events whose partitions may be another's by then. They come again to their owner.
      await this.heartbeatOf(payload);
      await sleep(Math.min(500, until - Date.now()));
    }
    return active();
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

function offsetOf(events: ConsumedEvent[]): { offset?: string } {
  return events.length === 1 ? { offset: events[0]!.offset } : {};
}

function decodeRecord<R extends StreamRecord>(
  spec: TopicSpec<R>,
  group: string,
  topic: string,
  partition: number,
  message: KafkaMessage,
  newFrom: bigint,
): { event: ConsumedEvent<R> } | { undecodable: SetAsideRecord } {
  const key = message.key?.toString() ?? null;
  try {
    if (!message.value) throw new UndecodableEventError('empty record');
    const record = spec.codec.decode(message.value);
    const redelivery = BigInt(message.offset) < newFrom;
    return { event: { topic, spec, partition, offset: message.offset, key, record, redelivery } };
  } catch (error) {
    if (!(error instanceof UndecodableEventError)) throw error;
    const { offset, value: payload } = message;
    return {
      undecodable: { group, topic, partition, offset, key, payload, reason: `undecodable: ${error.message}` },
    };
  }
}
