import type { DeliveryEvent } from '@mds/contracts';
import type { BatchContext, ConsumedEvent } from '@mds/kafka';
import type { DeliveryOptions } from './delivery-options.js';
import type { DeliveryRequest } from './events.js';
import type { NewDelivery, StoredDelivery } from './ports.js';
import type { Lane, Item } from './lanes.js';
import { LaneSet } from './lane-set.js';
import { startDelivery } from '../domain/delivery.js';
import { failUnroutable } from './unroutable.js';
import { createOutcomePublisher, type OutcomePublisher } from './outcomes.js';

export { claimLifeMs, type DeliveryOptions } from './delivery-options.js';

/** Where what the consumer reads goes: a lane in memory, the journal (parked), or its known outcome. */
function createIntake(o: DeliveryOptions, lanes: LaneSet, outcomes: OutcomePublisher) {
  /** A message read from the log, new to this replica: queued, or parked behind the bot's backlog. */
  function arrive(
    d: NewDelivery,
    e: ConsumedEvent<DeliveryEvent>,
    ack: () => void,
    park: Map<Lane, Item[]>,
  ): void {
    const record = e.record as DeliveryRequest;
    const lane = lanes.of(d.botId, d.partition);
    const item: Item = {
      offset: e.offset,
      messageId: d.messageId,
      botId: d.botId,
      partition: d.partition,
      request: record,
      requestBytes: d.request,
      acks: [ack],
      state: startDelivery({ type: 'Arrive', deadlineMs: d.deliverBefore.getTime() }),
    };
    if (lane.parkedBehind || lane.queue.length >= o.windowPerBot) {
      const list = park.get(lane) ?? [];
      list.push(item);
      park.set(lane, list);
      return;
    }
    lanes.enqueue(lane, item);
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
        deliverBefore: new Date(i.state.deadlineMs),
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
    const watched = lanes.itemOfRow(row);
    watched.acks = acks;
    lanes.enqueue(lane, watched);
  }

  return {
    async store(events: ConsumedEvent<DeliveryEvent>[], batch: Pick<BatchContext, 'defer'>): Promise<void> {
      const owned = events.filter((e) => lanes.owned.has(e.partition));
      const unroutable = owned.filter((e) => e.record.event.$case === 'deliveryUnroutable');
      if (unroutable.length > 0) await failUnroutable(o, outcomes, unroutable, batch);
      const routed = owned.filter((e) => e.record.event.$case === 'deliveryRequested');
      const again = routed.filter((e) => e.redelivery && !lanes.known.has(deliveryOf(e).messageId));
      const rows = new Map(
        (await o.journal.rowsOf(again.map((e) => deliveryOf(e).messageId))).map((r) => [r.messageId, r]),
      );
      const park = new Map<Lane, Item[]>();
      const touched = new Set<Lane>();
      for (const e of routed) {
        const d = deliveryOf(e);
        const ack = batch.defer(e);
        const held = lanes.known.get(d.messageId);
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
        const lane = lanes.of(delivery.botId, e.partition);
        touched.add(lane);
        if (!row) arrive(delivery, e, ack, park);
        else if (row.status === 'pending') {
          // Parked by an owner before: the lane reads it from the journal in its turn.
          ack();
          lane.parkedBehind = true;
        } else settleKnown(lane, [ack], row);
      }
      await parkAll(park);
      for (const lane of touched) {
        if (lane.parkedBehind && lane.queue.length < o.windowPerBot / 2) void lanes.refill(lane);
        lanes.pump(lane);
      }
    },
  };
}

function deliveryOf(e: ConsumedEvent<DeliveryEvent>) {
  return (e.record as DeliveryRequest).event.value;
}

/**
 * Routed deliveries of the bots whose partitions this replica owns, sent per bot at the bot's and each
 * chat's rate, retried and decided, one outcome each. Each bot has its own lane, so a slow, failing or
 * rate-limited bot never holds up another bot. A message waits in memory (its Kafka offset uncommitted)
 * and gets its journal row when its first call is claimed; a bot's messages beyond its window, and
 * messages waiting to be retried, are parked in the journal instead.
 */
export function createDeliveries(o: DeliveryOptions) {
  const now = o.now ?? Date.now;
  const work = new Set<Promise<void>>();
  const track = (w: Promise<void>) => {
    work.add(w);
    void w.finally(() => work.delete(w));
  };
  const outcomes = createOutcomePublisher({
    publisher: o.publisher,
    journal: o.journal,
    logger: o.logger,
    stopping: () => lanes.stopping,
    track,
  });
  const lanes = new LaneSet(o, outcomes, track, now);
  const intake = createIntake(o, lanes, outcomes);

  return {
    /**
     * The consumer's handler: queues the routed deliveries it reads. Each holds its Kafka offset until it
     * is decided and published, or parked in the journal.
     */
    store: (events: ConsumedEvent<DeliveryEvent>[], batch: Pick<BatchContext, 'defer'>) =>
      intake.store(events, batch),

    /** The delivery topic's partitions this replica owns now (empty while the group rebalances). */
    assign(partitions: readonly number[]): void {
      const next = new Set(partitions);
      const gained = [...next].filter((p) => !lanes.owned.has(p));
      lanes.owned = next;
      lanes.paused = next.size === 0;
      for (const lane of [...lanes.all()]) if (!next.has(lane.partition)) lanes.drop(lane);
      if (lanes.paused) return;
      for (const lane of lanes.all()) lanes.pump(lane);
      if (gained.length > 0)
        lanes
          .adopt(gained)
          .catch((error: unknown) =>
            o.logger.error(
              { err: error, partitions: gained },
              'could not load the open deliveries of new partitions',
            ),
          );
    },

    /** Stops starting calls; waits for the ones in flight to be decided and published. */
    async stop(): Promise<void> {
      lanes.stop();
      while (work.size > 0) await Promise.allSettled([...work]);
    },

    /** For the poller: waits for, and takes, one slot of the bot's rate (MAX counts polls as requests). */
    async takeSlot(botId: string, partition: number, signal: AbortSignal): Promise<void> {
      const lane = lanes.of(botId, partition);
      const wait = lane.schedule.waitMs(now());
      lane.schedule.take(now() + wait); // reserved now, so sends cannot take it meanwhile
      if (wait > 0)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, wait);
          signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        });
    },

    queuedCount: () => lanes.known.size,
    /** Per-chat rate schedules held in memory, over every lane. */
    chatSchedules: () => [...lanes.all()].reduce((n, lane) => n + lane.chatSchedules(), 0),
  };
}
