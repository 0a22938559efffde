/** How far behind a member is on one partition it owns. */
export interface PartitionLag {
  topic: string;
  partition: number;
  /** Records in the log not yet handled: the high watermark minus the next offset to handle. */
  records: number;
  /**
   * When the oldest event not yet handled happened (its `occurredAt`, in ms), or undefined when the
   * partition is caught up. Its age is how stale what the group stores from this partition is.
   */
  oldestPendingAt: number | undefined;
}

interface PartitionState {
  topic: string;
  partition: number;
  highWatermark: bigint | undefined;
  /** The next offset to handle (known once a batch of the partition arrived). */
  next: bigint | undefined;
  /** occurredAt of the first event in hand not yet handled. */
  pendingSince: number | undefined;
  /** occurredAt of the last event handled. */
  lastHandledAt: number | undefined;
}

/**
 * The lag of the partitions one member owns, from what its fetches bring: the high watermark each fetch
 * reports (refreshed from the broker while a batch is stuck), the next offset to handle, and the times the
 * events themselves carry. A partition with nothing in hand and nothing more in the log is caught up.
 */
export class LagTracker {
  private partitions = new Map<string, PartitionState>();
  private inHandSince: number | undefined;

  /** The partitions of a new assignment (each caught up until a fetch says otherwise); none while rebalancing. */
  assigned(assignment: ReadonlyMap<string, readonly number[]>): void {
    const next = new Map<string, PartitionState>();
    for (const [topic, partitions] of assignment) {
      for (const partition of partitions) {
        const key = `${topic}/${partition}`;
        next.set(key, this.partitions.get(key) ?? blank(topic, partition));
      }
    }
    this.partitions = next;
  }

  /** A batch arrived: the log's end, and the first event's time (it is the oldest not yet handled). */
  arrived(
    topic: string,
    partition: number,
    o: { highWatermark: bigint; firstOffset: bigint; firstAt: number | undefined },
  ): void {
    const p = this.of(topic, partition);
    p.highWatermark = o.highWatermark;
    p.next ??= o.firstOffset;
    const firstAt = o.firstAt;
    p.pendingSince ??= firstAt;
    this.inHandSince ??= Date.now();
  }

  /** Events before `next` are handled; `nextAt` is the time of the next one in hand, if any. */
  handled(topic: string, partition: number, next: bigint, lastAt: number | undefined, nextAt?: number): void {
    const p = this.of(topic, partition);
    if (p.next === undefined || next > p.next) p.next = next;
    if (lastAt !== undefined) p.lastHandledAt = lastAt;
    p.pendingSince = nextAt;
  }

  /** Everything that arrived together is handled (or given back); nothing is in hand. */
  settled(): void {
    this.inHandSince = undefined;
    for (const p of this.partitions.values()) p.pendingSince = undefined;
  }

  /** How long the member has had events in hand without finishing them (0 when none). */
  stuckForMs(now = Date.now()): number {
    return this.inHandSince === undefined ? 0 : now - this.inHandSince;
  }

  /** Topics whose high watermarks are worth asking the broker for (a batch of theirs is in hand). */
  topicsInHand(): string[] {
    return [
      ...new Set(
        [...this.partitions.values()].filter((p) => p.pendingSince !== undefined).map((p) => p.topic),
      ),
    ];
  }

  /** The broker's answer to "where does each partition end". */
  highWatermarks(topic: string, ends: readonly { partition: number; offset: string }[]): void {
    for (const { partition, offset } of ends) {
      const p = this.partitions.get(`${topic}/${partition}`);
      if (p && (p.highWatermark === undefined || BigInt(offset) > p.highWatermark))
        p.highWatermark = BigInt(offset);
    }
  }

  snapshot(): PartitionLag[] {
    return [...this.partitions.values()].map((p) => {
      const records =
        p.highWatermark !== undefined && p.next !== undefined && p.highWatermark > p.next
          ? Number(p.highWatermark - p.next)
          : 0;
      // Nothing in hand but more in the log (a fetch stopped at its size): at most as old as the last handled.
      const oldestPendingAt = p.pendingSince ?? (records > 0 ? p.lastHandledAt : undefined);
      return { topic: p.topic, partition: p.partition, records, oldestPendingAt };
    });
  }

  private of(topic: string, partition: number): PartitionState {
    const key = `${topic}/${partition}`;
    let p = this.partitions.get(key);
    if (!p) {
      p = blank(topic, partition);
      this.partitions.set(key, p);
    }
    return p;
  }
}

function blank(topic: string, partition: number): PartitionState {
  return {
    topic,
    partition,
    highWatermark: undefined,
    next: undefined,
    pendingSince: undefined,
    lastHandledAt: undefined,
  };
}
