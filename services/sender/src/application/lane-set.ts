import type { DeliveryEvent, TopicSpec } from '@mds/contracts';
import { startDelivery } from '../domain/delivery.js';
import { attempt, type AttemptContext } from './attempts/turn.js';
import { factsOf } from './attempts/context.js';
import { claimLifeMs, type DeliveryOptions } from './delivery-options.js';
import { expiresAtMsOf, type DeliveryRequest } from './events.js';
import type { StoredDelivery } from './ports.js';
import { Lane, type Item } from './lanes.js';
import type { OutcomePublisher } from './outcomes.js';

const decode = (bytes: Uint8Array, spec: TopicSpec<DeliveryEvent>) =>
  spec.codec.decode(bytes) as DeliveryRequest;

/**
 * The bot lanes of the partitions this replica owns: which messages each holds, when each may start its
 * next one, and how they read what is parked for them in the journal.
 */
export class LaneSet {
  private readonly lanes = new Map<string, Lane>();
  /** Messages in memory, by id: a copy of one read again (a rebalance) joins it instead. */
  readonly known = new Map<string, Item>();
  owned = new Set<number>();
  paused = true;
  readonly context: AttemptContext;
  private readonly lostClaimEndsMs: number;

  constructor(
    private readonly o: DeliveryOptions,
    private readonly outcomes: OutcomePublisher,
    private readonly track: (work: Promise<void>) => void,
    private readonly now: () => number,
    /** Aborted by stop(): no new turn starts, and journal writes and publications stop being retried. */
    private readonly stopped: AbortController,
  ) {
    const orphanRecheckMs = o.orphanRecheckMs ?? 5_000;
    this.lostClaimEndsMs = claimLifeMs(o) + orphanRecheckMs;
    this.context = {
      provider: o.provider,
      journal: o.journal,
      directory: o.directory,
      personKeys: o.personKeys,
      outcomes,
      metrics: o.metrics,
      logger: o.logger,
      instanceId: o.journal.instanceId,
      sendTimeoutMs: o.sendTimeoutMs,
      retry: o.retry,
      unconfirmed: o.unconfirmed ?? 'fail',
      journalRetryMs: o.journalRetryMs ?? 60_000,
      orphanRecheckMs,
      now,
      random: o.random ?? Math.random,
      stopped: this.stopped.signal,
    };
  }

  get stopping(): boolean {
    return this.stopped.signal.aborted;
  }

  all(): IterableIterator<Lane> {
    return this.lanes.values();
  }

  of(botId: string, partition: number): Lane {
    let lane = this.lanes.get(botId);
    if (!lane) {
      lane = new Lane(botId, partition, this.o.botRatePerSecond, this.o.chatRatePerSecond);
      this.lanes.set(botId, lane);
    }
    return lane;
  }

  enqueue(lane: Lane, item: Item): void {
    this.known.set(item.messageId, item);
    // lastQueuedSeq is not moved here: only reads of the journal in seq order (refill, adopt) move it. A row
    // queued out of turn (a claimed one, read again with its record after a rebalance) has a later seq than
    // rows parked before its claim, which a refill from its seq would never read.
    lane.queue.push(item);
    this.o.metrics.queued.inc();
  }

  /** A message of a journal row: parked, or claimed by a process that may be gone (an orphan). */
  itemOfRow(row: StoredDelivery): Item {
    const request = decode(row.request, this.o.deliveryTopic);
    return {
      messageId: row.messageId,
      botId: row.botId,
      partition: row.partition,
      request,
      requestBytes: row.request,
      acks: [],
      state: startDelivery({
        type: 'Load',
        row: factsOf(this.context, row),
        deadlineMs: row.deliverBefore.getTime(),
        expiresAtMs: expiresAtMsOf(request),
        nowMs: this.now(),
        recheckMs: this.context.orphanRecheckMs,
      }),
    };
  }

  forget(lane: Lane, item: Item): void {
    if (this.known.get(item.messageId) === item) this.known.delete(item.messageId);
    const i = lane.queue.indexOf(item);
    if (i < 0) return;
    lane.queue.splice(i, 1);
    this.o.metrics.queued.dec();
    if (lane.queue.length === 0) lane.pruneChats(this.now());
    if (lane.parkedBehind && lane.queue.length < this.o.windowPerBot / 2) void this.refill(lane);
  }

  /** More of the bot's messages are parked in the journal: read when there is room (now, if there is). */
  parkedMore(lane: Lane): void {
    lane.parkedBehind = true;
    if (lane.refilling) lane.parkedDuringRefill = true;
  }

  /** Reads the bot's open work in the journal again from its first row (what is queued already is kept). */
  rereadFromStart(lane: Lane): void {
    lane.parkedBehind = true;
    lane.lastQueuedSeq = 0n;
    void this.refill(lane);
  }

  /**
   * Its claim failed: it was decided meanwhile, or another replica claimed it, having owned the partition
   * for a moment during a rebalance. That replica's call may yet give it back for a retry, and then no lane
   * would hold it (refills read on from the last queued seq). So once such a claim has surely ended, the
   * lane reads its open work again from the start.
   */
  claimLost(lane: Lane, item: Item): void {
    this.forget(lane, item);
    if (lane.recheck || this.stopping) return;
    lane.recheck = setTimeout(() => {
      lane.recheck = undefined;
      if (this.lanes.get(lane.botId) === lane) this.rereadFromStart(lane);
    }, this.lostClaimEndsMs);
  }

  private wake(lane: Lane, atMs: number): void {
    if (lane.timer && lane.wakeAtMs <= atMs) return;
    clearTimeout(lane.timer);
    lane.wakeAtMs = atMs;
    lane.timer = setTimeout(
      () => {
        lane.timer = undefined;
        lane.wakeAtMs = Number.POSITIVE_INFINITY;
        this.pump(lane);
      },
      Math.max(0, atMs - this.now()),
    );
  }

  /** Starts what may start now; sets a timer for what may start later. */
  pump(lane: Lane): void {
    for (;;) {
      if (this.paused || this.stopping || this.lanes.get(lane.botId) !== lane) return;
      const next = lane.pick(this.now(), this.o.botConcurrency);
      if (!next) return;
      if ('wakeAtMs' in next) return this.wake(lane, next.wakeAtMs);
      const item = next.item;
      lane.running.add(item);
      const turn = attempt(this.context, lane, item)
        .then(
          () => this.settle(lane, item),
          (error: unknown) => this.refuse(lane, item, error),
        )
        .finally(() => {
          lane.running.delete(item);
          this.pump(lane);
        });
      this.track(turn);
    }
  }

  /** What the lane does after a message's turn: lets go of it once nothing is left to do of it here. */
  private settle(lane: Lane, item: Item): void {
    if (item.state.status === 'done') this.forget(lane, item);
    else if (item.state.status === 'lost') this.claimLost(lane, item);
  }

  /**
   * The journal refuses the delivery for its content (PostgreSQL class 22 or 23: a message id that is no UUID,
   * a NUL in a field): no retry can store it. It is set aside in dead_letters and let go of, so that its
   * offset no longer holds the partition's commit and the lane no longer tries it every second.
   */
  private async refuse(lane: Lane, item: Item, error: unknown): Promise<void> {
    this.o.logger.error(
      { err: error, botId: item.botId, partition: item.partition, offset: item.offset },
      'the journal refuses a delivery for its content; it is set aside and the lane goes on',
    );
    for (;;) {
      try {
        await this.o.setAside?.({
          partition: item.partition,
          offset: item.offset,
          botId: item.botId,
          request: item.requestBytes,
          error,
        });
        break;
      } catch (setAsideError) {
        if (this.stopping) return;
        this.o.logger.error({ err: setAsideError }, 'could not set a delivery aside; retrying');
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
    this.forget(lane, item);
    for (const ack of item.acks) ack();
  }

  async refill(lane: Lane): Promise<void> {
    if (lane.refilling || !this.owned.has(lane.partition) || this.lanes.get(lane.botId) !== lane) return;
    lane.refilling = true;
    try {
      do {
        lane.parkedDuringRefill = false;
        const room = this.o.windowPerBot - lane.queue.length;
        if (room <= 0) return;
        const rows = await this.o.journal.openOfBot(lane.botId, lane.lastQueuedSeq, room);
        for (const row of rows) {
          if (row.seq > lane.lastQueuedSeq) lane.lastQueuedSeq = row.seq;
          if (!this.known.has(row.messageId)) this.enqueue(lane, this.itemOfRow(row));
        }
        lane.parkedBehind = rows.length >= room || lane.parkedDuringRefill;
      } while (lane.parkedDuringRefill);
      this.pump(lane);
    } catch (error) {
      this.o.logger.error({ err: error, botId: lane.botId }, 'could not read parked deliveries; retrying');
      setTimeout(() => void this.refill(lane), 2_000).unref();
    } finally {
      lane.refilling = false;
    }
  }

  /** Reads the open work of partitions this replica just took, and publishes outcomes left unpublished. */
  async adopt(partitions: number[]): Promise<void> {
    for (const botId of await this.o.journal.botsWithOpenWork(partitions)) {
      const lane = this.lanes.get(botId);
      if (lane) {
        this.rereadFromStart(lane);
        continue;
      }
      const rows = await this.o.journal.openOfBot(botId, 0n, this.o.windowPerBot);
      if (rows.length === 0) continue;
      const fresh = this.of(botId, rows[0]!.partition);
      for (const row of rows) if (!this.known.has(row.messageId)) this.enqueue(fresh, this.itemOfRow(row));
      fresh.lastQueuedSeq = rows.at(-1)!.seq;
      fresh.parkedBehind = rows.length >= this.o.windowPerBot;
      this.pump(fresh);
    }
    // Outcomes of parked messages decided by an owner before, perhaps never published.
    for (const row of await this.o.journal.unpublished(partitions)) this.outcomes.republish(row, []);
  }

  /** The delivery topic's partitions this replica owns now (empty while the group rebalances). */
  assign(partitions: readonly number[]): void {
    const next = new Set(partitions);
    const gained = [...next].filter((p) => !this.owned.has(p));
    this.owned = next;
    this.paused = next.size === 0;
    for (const lane of [...this.all()]) if (!next.has(lane.partition)) this.drop(lane);
    if (this.paused) return;
    for (const lane of this.all()) this.pump(lane);
    if (gained.length > 0)
      this.adopt(gained).catch((error: unknown) =>
        this.o.logger.error(
          { err: error, partitions: gained },
          'could not load the open deliveries of new partitions',
        ),
      );
  }

  /** For the poller: waits for, and takes, one slot of the bot's rate (MAX counts polls as requests). */
  async takeSlot(botId: string, partition: number, signal: AbortSignal): Promise<void> {
    const lane = this.of(botId, partition);
    const wait = lane.schedule.waitMs(this.now());
    lane.schedule.take(this.now() + wait); // reserved now, so sends cannot take it meanwhile
    if (wait > 0)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, wait);
        signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
  }

  /** Forgets a lane whose partition went elsewhere (its calls in flight end on their own). */
  drop(lane: Lane): void {
    clearTimeout(lane.timer);
    clearTimeout(lane.recheck);
    for (const item of lane.queue) {
      if (this.known.get(item.messageId) === item) this.known.delete(item.messageId);
      this.o.metrics.queued.dec();
    }
    lane.queue.length = 0;
    this.lanes.delete(lane.botId);
  }

  stop(): void {
    this.stopped.abort();
    for (const lane of this.lanes.values()) {
      clearTimeout(lane.timer);
      clearTimeout(lane.recheck);
    }
  }
}
