import type { DeliveryEvent, TopicSpec } from '@mds/contracts';
import type { BatchContext, ConsumedEvent, EventPublisher } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { attempt, settleOrphan, type AttemptContext } from './attempts.js';
import type { RetryPolicy } from './domain/attempt.js';
import type { BotDirectory } from './directory.js';
import type { DeliveryRequest } from './events.js';
import type { Journal, NewDelivery, StoredDelivery } from './journal.js';
import { Lane, type Item } from './lanes.js';
import type { SenderMetrics } from './metrics.js';
import { createOutcomePublisher } from './outcomes.js';
import type { MessengerProvider } from './provider.js';

export interface DeliveryOptions {
  provider: MessengerProvider;
  journal: Journal;
  directory: BotDirectory;
  publisher: Pick<EventPublisher, 'publish'>;
  logger: Logger;
  metrics: SenderMetrics;
  deliveryTopic: TopicSpec<DeliveryEvent>;
  botRatePerSecond: number;
  chatRatePerSecond: number;
  botConcurrency: number;
  sendTimeoutMs: number;
  retry: RetryPolicy;
  /** Messages of one bot held in memory; the rest are parked in the journal until these are done. */
  windowPerBot: number;
  /** What a call that may have been delivered leads to (see nextStep): `fail` by default. */
  unconfirmed?: 'fail' | 'retry';
  /** How long a journal write after a provider call is retried while the database is away (60 s). */
  journalRetryMs?: number;
  /** How soon a claim that may be abandoned is looked at again (5 s). */
  orphanRecheckMs?: number;
  now?: () => number;
  random?: () => number;
}

/** The longest a live claim lasts: two calls (a refused token is tried once more) and storing the result. */
export function claimLifeMs(o: { sendTimeoutMs: number; journalRetryMs?: number }): number {
  return 2 * o.sendTimeoutMs + (o.journalRetryMs ?? 60_000);
}

const decode = (bytes: Uint8Array, spec: TopicSpec<DeliveryEvent>) =>
  spec.codec.decode(bytes) as DeliveryRequest;

/**
 * Routed deliveries of the bots whose partitions this replica owns, sent per bot at the bot's and each
 * chat's rate, retried and decided, one outcome each. Each bot has its own lane, so a slow, failing or
 * rate-limited bot never holds up another bot. A message waits in memory (its Kafka offset uncommitted)
 * and gets its journal row when its first call is claimed; a bot's messages beyond its window, and
 * messages waiting to be retried, are parked in the journal instead.
 */
export function createDeliveries(o: DeliveryOptions) {
  const now = o.now ?? Date.now;
  const log = o.logger;
  const lanes = new Map<string, Lane>();
  /** Messages in memory, by id: a copy of one read again (a rebalance) joins it instead. */
  const known = new Map<string, Item>();
  let owned = new Set<number>();
  let paused = true;
  let stopping = false;
  const work = new Set<Promise<void>>();
  const track = (w: Promise<void>) => {
    work.add(w);
    void w.finally(() => work.delete(w));
  };
  const orphanRecheckMs = o.orphanRecheckMs ?? 5_000;
  const lostClaimEndsMs = claimLifeMs(o) + orphanRecheckMs;

  const outcomes = createOutcomePublisher({
    publisher: o.publisher,
    journal: o.journal,
    logger: log,
    stopping: () => stopping,
    track,
  });

  const context: AttemptContext = {
    provider: o.provider,
    journal: o.journal,
    directory: o.directory,
    outcomes,
    metrics: o.metrics,
    logger: log,
    instanceId: o.journal.instanceId,
    sendTimeoutMs: o.sendTimeoutMs,
    retry: o.retry,
    unconfirmed: o.unconfirmed ?? 'fail',
    journalRetryMs: o.journalRetryMs ?? 60_000,
    orphanRecheckMs,
    now,
    random: o.random ?? Math.random,
    stopping: () => stopping,
    forget,
    claimLost,
  };

  function laneOf(botId: string, partition: number): Lane {
    let lane = lanes.get(botId);
    if (!lane) {
      lane = new Lane(botId, partition, o.botRatePerSecond, o.chatRatePerSecond);
      lanes.set(botId, lane);
    }
    return lane;
  }

  function enqueue(lane: Lane, item: Item): void {
    known.set(item.messageId, item);
    lane.queue.push(item);
    if (item.seq !== undefined && item.seq > lane.lastQueuedSeq) lane.lastQueuedSeq = item.seq;
    o.metrics.queued.inc();
  }

  function itemOfRow(row: StoredDelivery): Item {
    return {
      messageId: row.messageId,
      botId: row.botId,
      partition: row.partition,
      request: decode(row.request, o.deliveryTopic),
      requestBytes: row.request,
      deadlineMs: row.deliverBefore.getTime(),
      notBeforeMs:
        row.status === 'sending' && !row.claimAbandoned
          ? now() + orphanRecheckMs
          : (row.notBefore?.getTime() ?? 0),
      failures: row.failures,
      parked: true,
      seq: row.seq,
      orphan: row.status === 'sending',
      acks: [],
      inFlight: false,
    };
  }

  function forget(lane: Lane, item: Item): void {
    if (known.get(item.messageId) === item) known.delete(item.messageId);
    const i = lane.queue.indexOf(item);
    if (i < 0) return;
    lane.queue.splice(i, 1);
    o.metrics.queued.dec();
    if (lane.queue.length === 0) lane.pruneChats(now());
    if (lane.parkedBehind && lane.queue.length < o.windowPerBot / 2) void refill(lane);
  }

  /** Reads the bot's open work in the journal again from its first row (what is queued already is kept). */
  function rereadFromStart(lane: Lane): void {
    lane.parkedBehind = true;
    lane.lastQueuedSeq = 0n;
    void refill(lane);
  }

  /**
   * Its claim failed: it was decided meanwhile, or another replica claimed it, having owned the partition
   * for a moment during a rebalance. That replica's call may yet give it back for a retry, and then no lane
   * would hold it (refills read on from the last queued seq). So once such a claim has surely ended, the
   * lane reads its open work again from the start.
   */
  function claimLost(lane: Lane, item: Item): void {
    forget(lane, item);
    if (lane.recheck || stopping) return;
    lane.recheck = setTimeout(() => {
      lane.recheck = undefined;
      if (lanes.get(lane.botId) === lane) rereadFromStart(lane);
    }, lostClaimEndsMs);
  }

  function wake(lane: Lane, atMs: number): void {
    if (lane.timer && lane.wakeAtMs <= atMs) return;
    clearTimeout(lane.timer);
    lane.wakeAtMs = atMs;
    lane.timer = setTimeout(
      () => {
        lane.timer = undefined;
        lane.wakeAtMs = Number.POSITIVE_INFINITY;
        pump(lane);
      },
      Math.max(0, atMs - now()),
    );
  }

  /** Starts what may start now; sets a timer for what may start later. */
  function pump(lane: Lane): void {
    for (;;) {
      if (paused || stopping || lanes.get(lane.botId) !== lane) return;
      const next = lane.pick(now(), o.botConcurrency);
      if (!next) return;
      if ('wakeAtMs' in next) return wake(lane, next.wakeAtMs);
      const item = next.item;
      item.inFlight = true;
      lane.inFlight++;
      const turn = (item.orphan ? settleOrphan(context, lane, item) : attempt(context, lane, item))
        .catch((error: unknown) => {
          // The journal could not be reached. The message stays here, and its next turn, a second later,
          // learns from the journal what came of the interrupted step (or finishes it: see Item.resume).
          log.error({ err: error, messageId: item.messageId }, 'delivery step failed; trying again shortly');
          item.notBeforeMs = now() + 1_000;
        })
        .finally(() => {
          item.inFlight = false;
          lane.inFlight--;
          pump(lane);
        });
      track(turn);
    }
  }

  async function refill(lane: Lane): Promise<void> {
    if (lane.refilling || !owned.has(lane.partition) || lanes.get(lane.botId) !== lane) return;
    lane.refilling = true;
    try {
      do {
        lane.parkedDuringRefill = false;
        const room = o.windowPerBot - lane.queue.length;
        if (room <= 0) return;
        const rows = await o.journal.openOfBot(lane.botId, lane.lastQueuedSeq, room);
        for (const row of rows) {
          if (row.seq > lane.lastQueuedSeq) lane.lastQueuedSeq = row.seq;
          if (!known.has(row.messageId)) enqueue(lane, itemOfRow(row));
        }
        lane.parkedBehind = rows.length >= room || lane.parkedDuringRefill;
      } while (lane.parkedDuringRefill);
      pump(lane);
    } catch (error) {
      log.error({ err: error, botId: lane.botId }, 'could not read parked deliveries; retrying');
      setTimeout(() => void refill(lane), 2_000).unref();
    } finally {
      lane.refilling = false;
    }
  }

  async function adopt(partitions: number[]): Promise<void> {
    for (const botId of await o.journal.botsWithOpenWork(partitions)) {
      const lane = lanes.get(botId);
      if (lane) rereadFromStart(lane);
      else {
        const rows = await o.journal.openOfBot(botId, 0n, o.windowPerBot);
        if (rows.length === 0) continue;
        const fresh = laneOf(botId, rows[0]!.partition);
        for (const row of rows) if (!known.has(row.messageId)) enqueue(fresh, itemOfRow(row));
        fresh.lastQueuedSeq = rows.at(-1)!.seq;
        fresh.parkedBehind = rows.length >= o.windowPerBot;
        pump(fresh);
      }
    }
    // Outcomes of parked messages decided by an owner before, perhaps never published.
    for (const row of await o.journal.unpublished(partitions)) outcomes.republish(row, []);
  }

  function drop(lane: Lane): void {
    clearTimeout(lane.timer);
    clearTimeout(lane.recheck);
    for (const item of lane.queue) {
      if (known.get(item.messageId) === item) known.delete(item.messageId);
      o.metrics.queued.dec();
    }
    lane.queue.length = 0;
    lanes.delete(lane.botId);
  }

  /** A message read from the log, new to this replica: queued, or parked behind the bot's backlog. */
  function arrive(d: NewDelivery, record: DeliveryRequest, ack: () => void, park: Map<Lane, Item[]>): void {
    const lane = laneOf(d.botId, d.partition);
    const item: Item = {
      messageId: d.messageId,
      botId: d.botId,
      partition: d.partition,
      request: record,
      requestBytes: d.request,
      deadlineMs: d.deliverBefore.getTime(),
      notBeforeMs: 0,
      failures: 0,
      parked: false,
      orphan: false,
      acks: [ack],
      inFlight: false,
    };
    if (lane.parkedBehind || lane.queue.length >= o.windowPerBot) {
      const list = park.get(lane) ?? [];
      list.push(item);
      park.set(lane, list);
      return;
    }
    enqueue(lane, item);
  }

  /** Parks what did not fit in memory; rows that were there already tell what became of those messages. */
  async function parkAll(park: Map<Lane, Item[]>): Promise<void> {
    const items = [...park.values()].flat();
    if (items.length === 0) return;
    const existing = await o.journal.park(
      items.map((i) => ({
        messageId: i.messageId,
        botId: i.botId,
        partition: i.partition,
        request: i.requestBytes,
        deliverBefore: new Date(i.deadlineMs),
      })),
    );
    const rows = new Map(existing.map((r) => [r.messageId, r]));
    for (const [lane, list] of park) {
      lane.parkedBehind = true;
      if (lane.refilling) lane.parkedDuringRefill = true;
      for (const item of list) {
        const row = rows.get(item.messageId);
        if (row && row.status !== 'pending') settleKnown(lane, item.acks, row);
        // Parked: its row keeps it, and the lane reads it when its turn comes.
        else for (const ack of item.acks) ack();
      }
    }
  }

  /** A message read again whose row says it was decided or is claimed: republished, or watched. */
  function settleKnown(lane: Lane, acks: (() => void)[], row: StoredDelivery): void {
    if (row.status === 'sent' || row.status === 'failed') return outcomes.republish(row, acks);
    const watched = itemOfRow(row);
    watched.acks = acks;
    enqueue(lane, watched);
  }

  return {
    /**
     * The consumer's handler: queues the routed deliveries it reads. Each holds its Kafka offset until it
     * is decided and published, or parked in the journal.
     */
    async store(events: ConsumedEvent<DeliveryEvent>[], batch: Pick<BatchContext, 'defer'>): Promise<void> {
      const routed = events.filter(
        (e) => e.record.event.$case === 'deliveryRequested' && owned.has(e.partition),
      );
      const again = routed.filter((e) => e.redelivery && !known.has(deliveryOf(e).messageId));
      const rows = new Map(
        (await o.journal.rowsOf(again.map((e) => deliveryOf(e).messageId))).map((r) => [r.messageId, r]),
      );
      const park = new Map<Lane, Item[]>();
      const touched = new Set<Lane>();
      for (const e of routed) {
        const d = deliveryOf(e);
        const ack = batch.defer(e);
        const held = known.get(d.messageId);
        if (held) {
          held.acks.push(ack);
          continue;
        }
        const row = rows.get(d.messageId);
        const delivery = {
          messageId: d.messageId,
          botId: d.chat?.botId ?? '',
          partition: e.partition,
          request: Buffer.from(o.deliveryTopic.codec.encode(e.record)),
          deliverBefore: d.deliverBefore ?? new Date(0),
        };
        const lane = laneOf(delivery.botId, e.partition);
        touched.add(lane);
        if (!row) arrive(delivery, e.record, ack, park);
        else if (row.status === 'pending') {
          // Parked by an owner before: the lane reads it from the journal in its turn.
          ack();
          lane.parkedBehind = true;
        } else settleKnown(lane, [ack], row);
      }
      await parkAll(park);
      for (const lane of touched) {
        if (lane.parkedBehind && lane.queue.length < o.windowPerBot / 2) void refill(lane);
        pump(lane);
      }
    },

    /** The delivery topic's partitions this replica owns now (empty while the group rebalances). */
    assign(partitions: readonly number[]): void {
      const next = new Set(partitions);
      const gained = [...next].filter((p) => !owned.has(p));
      owned = next;
      paused = next.size === 0;
      for (const lane of [...lanes.values()]) if (!next.has(lane.partition)) drop(lane);
      if (paused) return;
      for (const lane of lanes.values()) pump(lane);
      if (gained.length > 0)
        adopt(gained).catch((error: unknown) =>
          log.error(
            { err: error, partitions: gained },
            'could not load the open deliveries of new partitions',
          ),
        );
    },

    /** Stops starting calls; waits for the ones in flight to be decided and published. */
    async stop(): Promise<void> {
      stopping = true;
      for (const lane of lanes.values()) {
        clearTimeout(lane.timer);
        clearTimeout(lane.recheck);
      }
      while (work.size > 0) await Promise.allSettled([...work]);
    },

    /** For the poller: waits for, and takes, one slot of the bot's rate (MAX counts polls as requests). */
    async takeSlot(botId: string, partition: number, signal: AbortSignal): Promise<void> {
      const lane = laneOf(botId, partition);
      const wait = lane.schedule.waitMs(now());
      lane.schedule.take(now() + wait); // reserved now, so sends cannot take it meanwhile
      if (wait > 0)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        });
    },

    queuedCount: () => known.size,
    /** Per-chat rate schedules held in memory, over every lane. */
    chatSchedules: () => [...lanes.values()].reduce((n, lane) => n + lane.chatSchedules(), 0),
  };
}

function deliveryOf(e: ConsumedEvent<DeliveryEvent>) {
  return (e.record as DeliveryRequest).event.value;
}

export type Deliveries = ReturnType<typeof createDeliveries>;
