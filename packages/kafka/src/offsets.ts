/**
 * Which offset of each partition may be committed: every record before it was handled, and no record
 * from it on is still deferred. Records are handled in order per partition, but a handler may keep some
 * of them (defer) and finish them later, in any order: the commit position then stays at the first one
 * still open. One tracker serves one group generation; a rebalance starts a new one (records not
 * committed come again, and a release for the old generation is ignored).
 */
export class OffsetTracker {
  private readonly partitions = new Map<string, PartitionOffsets>();

  private of(topic: string, partition: number): PartitionOffsets {
    const key = `${topic}\u0000${partition}`;
    let p = this.partitions.get(key);
    if (!p) {
      p = { topic, partition, handledNext: undefined, committed: undefined, deferred: new Set() };
      this.partitions.set(key, p);
    }
    return p;
  }

  /** Every record of the partition before `nextOffset` is handled, except the ones deferred. */
  handled(topic: string, partition: number, nextOffset: bigint): void {
    const p = this.of(topic, partition);
    if (p.handledNext === undefined || nextOffset > p.handledNext) p.handledNext = nextOffset;
  }

  /** The record at `offset` stays open until `release` is called with it. */
  defer(topic: string, partition: number, offset: bigint): void {
    this.of(topic, partition).deferred.add(offset);
  }

  release(topic: string, partition: number, offset: bigint): void {
    this.of(topic, partition).deferred.delete(offset);
  }

  deferredCount(topic: string, partition: number): number {
    return this.partitions.get(`${topic}\u0000${partition}`)?.deferred.size ?? 0;
  }

  totalDeferred(): number {
    let n = 0;
    for (const p of this.partitions.values()) n += p.deferred.size;
    return n;
  }

  /** Commit positions that moved since they were last committed. */
  toCommit(): { topic: string; partition: number; offset: bigint }[] {
    const out: { topic: string; partition: number; offset: bigint }[] = [];
    for (const p of this.partitions.values()) {
      if (p.handledNext === undefined) continue;
      let position = p.handledNext;
      for (const offset of p.deferred) if (offset < position) position = offset;
      if (p.committed === undefined || position > p.committed)
        out.push({ topic: p.topic, partition: p.partition, offset: position });
    }
    return out;
  }

  committed(positions: readonly { topic: string; partition: number; offset: bigint }[]): void {
    for (const { topic, partition, offset } of positions) {
      const p = this.of(topic, partition);
      if (p.committed === undefined || offset > p.committed) p.committed = offset;
    }
  }
}

interface PartitionOffsets {
  topic: string;
  partition: number;
  handledNext: bigint | undefined;
  committed: bigint | undefined;
  deferred: Set<bigint>;
}
