import type { Logger } from '@mds/logging';
import type { Consumer, EachBatchPayload } from 'kafkajs';
import type { ConsumedEvent } from './consumer.js';
import type { KafkaMetrics } from './metrics.js';
import { OffsetTracker } from './offsets.js';

/**
 * The consumer's offset manager: which offsets of this generation are handled or still deferred, pausing
 * a partition with too many deferred events, and committing the handled positions on kafkajs's group.
 */
export class CommitManager {
  private tracker = new OffsetTracker();
  private readonly paused = new Set<string>();
  /** Commits through kafkajs's consumer group (it works while stopping, unlike consumer.commitOffsets). */
  private commitThroughGroup: EachBatchPayload['commitOffsetsIfNecessary'] | undefined;
  private committing: Promise<void> | undefined;

  constructor(
    private readonly o: {
      consumer: Consumer;
      groupId: string;
      log: Logger;
      metrics?: KafkaMetrics;
      commitOffsets?: boolean;
      maxDeferred: number;
    },
  ) {}

  /** A new generation: every uncommitted record comes again from the committed offsets. */
  newGeneration(): void {
    this.tracker = new OffsetTracker();
    if (this.paused.size > 0) {
      this.o.consumer.resume(
        [...this.paused].map((key) => JSON.parse(key) as { topic: string; partitions: number[] }),
      );
      this.paused.clear();
    }
  }

  /** The batches of this generation commit through the group of the runner that handed them over. */
  commitThrough(payload: EachBatchPayload): void {
    // An arrow function of kafkajs's runner, bound to its consumer group (the same across generations).
    this.commitThroughGroup = (offsets) => payload.commitOffsetsIfNecessary(offsets);
  }

  handled(topic: string, partition: number, nextOffset: bigint): void {
    this.tracker.handled(topic, partition, nextOffset);
  }

  /** A record kept open (deferred) by a try that failed, and set aside since: nothing waits for it. */
  release(topic: string, partition: number, offset: string): void {
    this.tracker.release(topic, partition, BigInt(offset));
  }

  totalDeferred(): number {
    return this.tracker.totalDeferred();
  }

  defer(event: ConsumedEvent): () => void {
    const owner = this.tracker;
    const offset = BigInt(event.offset);
    const { topic, partition } = event;
    owner.defer(topic, partition, offset);
    const key = JSON.stringify({ topic, partitions: [partition] });
    if (owner.deferredCount(topic, partition) >= this.o.maxDeferred && !this.paused.has(key)) {
      this.paused.add(key);
      this.o.consumer.pause([{ topic, partitions: [partition] }]);
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      owner.release(topic, partition, offset);
      const fewEnough = owner.deferredCount(topic, partition) < this.o.maxDeferred / 2;
      if (owner === this.tracker && this.paused.has(key) && fewEnough) {
        this.paused.delete(key);
        this.o.consumer.resume([{ topic, partitions: [partition] }]);
      }
    };
  }

  /** Commits every position that moved; one at a time. */
  commitHandled(): Promise<void> {
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
        this.o.log.debug({ err: error }, 'could not commit offsets');
      })
      .finally(() => {
        this.committing = undefined;
      });
    return this.committing;
  }
}
