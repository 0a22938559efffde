export interface QueuedUpdate<U> {
  /** Telegram `update_id` / MAX sequence number (what a marker points at). */
  readonly id: number;
  readonly at: number;
  readonly type: string;
  readonly payload: U;
}

/**
 * The pending updates of one bot, oldest first, ids strictly increasing. Both messengers confirm by
 * position: everything below an offset (Telegram) or marker (MAX) is forgotten.
 */
export class UpdateQueue<U> {
  private items: QueuedUpdate<U>[] = [];
  private next: number;

  constructor(
    firstId: number,
    private readonly retentionMs: number,
  ) {
    this.next = firstId;
  }

  /** A queue put back as it was saved: its pending updates, oldest first, and the id the next one gets. */
  static restored<U>(items: readonly QueuedUpdate<U>[], nextId: number, retentionMs: number): UpdateQueue<U> {
    const queue = new UpdateQueue<U>(nextId, retentionMs);
    queue.items = [...items];
    return queue;
  }

  /** The id the next appended update gets. */
  get nextId(): number {
    return this.next;
  }

  get size(): number {
    return this.items.length;
  }

  append(type: string, at: number, build: (id: number) => U): QueuedUpdate<U> {
    const update = { id: this.next++, at, type, payload: build(this.next - 1) };
    this.items.push(update);
    return update;
  }

  /** Forgets every update whose id is below `id`. */
  confirmBefore(id: number): void {
    let drop = 0;
    while (drop < this.items.length && this.items[drop]!.id < id) drop++;
    if (drop) this.items.splice(0, drop);
  }

  /** Keeps only the newest `count` updates (Telegram's negative offset). */
  keepLast(count: number): void {
    if (this.items.length > count) this.items.splice(0, this.items.length - count);
  }

  /** Up to `limit` updates with id at least `fromId`, of the given types (all when undefined). */
  read(fromId: number, limit: number, types?: ReadonlySet<string>): QueuedUpdate<U>[] {
    const out: QueuedUpdate<U>[] = [];
    for (const item of this.items) {
      if (out.length >= limit) break;
      if (item.id < fromId) continue;
      if (types && !types.has(item.type)) continue;
      out.push(item);
    }
    return out;
  }

  /**
   * Like `read`, and also where the next read should start: past the last update looked at, matching or
   * not (a MAX marker moves past updates of other types too).
   */
  scan(
    fromId: number,
    limit: number,
    types?: ReadonlySet<string>,
  ): { items: QueuedUpdate<U>[]; next: number } {
    const items: QueuedUpdate<U>[] = [];
    for (const item of this.items) {
      if (item.id < fromId) continue;
      if (items.length >= limit) return { items, next: item.id };
      if (!types || types.has(item.type)) items.push(item);
    }
    return { items, next: Math.max(fromId, this.next) };
  }

  /** The oldest update with id at least `fromId`. */
  first(fromId = 0): QueuedUpdate<U> | undefined {
    return this.items.find((item) => item.id >= fromId);
  }

  head(): QueuedUpdate<U> | undefined {
    return this.items[0];
  }

  clear(): void {
    this.items = [];
  }

  /** Drops updates older than the retention (Telegram keeps them 24 hours). */
  prune(now: number): void {
    const oldest = now - this.retentionMs;
    let drop = 0;
    while (drop < this.items.length && this.items[drop]!.at < oldest) drop++;
    if (drop) this.items.splice(0, drop);
  }
}
