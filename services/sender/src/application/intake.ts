import type { DeliveryEvent } from '@mds/contracts';
import type { BatchContext, ConsumedEvent } from '@mds/kafka';
import { startDelivery } from '../domain/delivery.js';
import type { DeliveryOptions } from './delivery-options.js';
import { cancelDeliveries } from './cancel.js';
import { expiresAtMsOf, keyOf, sendAtOf, type DeliveryRequest } from './events.js';
import type { LaneSet } from './lane-set.js';
import type { Item, Lane } from './lanes.js';
import type { OutcomePublisher } from './outcomes.js';
import type { NewDelivery, StoredDelivery } from './ports.js';
import { failUnroutable } from './unroutable.js';

const deliveryOf = (e: ConsumedEvent<DeliveryEvent>) => (e.record as DeliveryRequest).event.value;
/** A work order's journal key: its message's id, or its fallback channel's own (domain/channel.ts). */
const keyOfOrder = (e: ConsumedEvent<DeliveryEvent>) => keyOf(deliveryOf(e));

/** Where what the consumer reads goes: a lane in memory, the journal (parked), or its known outcome. */
export class Intake {
  constructor(
    private readonly o: DeliveryOptions,
    private readonly lanes: LaneSet,
    private readonly outcomes: OutcomePublisher,
  ) {}

  /** Takes a batch of the delivery topic: each event holds its Kafka offset until decided, or parked. */
  async store(events: ConsumedEvent<DeliveryEvent>[], batch: Pick<BatchContext, 'defer'>): Promise<void> {
    const { o, lanes } = this;
    const owned = events.filter((e) => lanes.owned.has(e.partition));
    const unroutable = owned.filter((e) => e.record.event.$case === 'deliveryUnroutable');
    if (unroutable.length > 0) await failUnroutable(o, this.outcomes, unroutable, batch);
    const routed = owned.filter((e) => e.record.event.$case === 'deliveryRequested');
    const cancels = owned.filter((e) => e.record.event.$case === 'deliveryCancelRequested');
    const again = routed.filter((e) => e.redelivery && !lanes.known.has(keyOfOrder(e)));
    const rows = new Map((await o.journal.rowsOf(again.map(keyOfOrder))).map((r) => [r.messageId, r]));
    const park = new Map<Lane, Item[]>();
    const touched = new Set<Lane>();
    for (const e of routed) {
      const lane = this.take(e, batch.defer(e), rows, park);
      if (lane) touched.add(lane);
    }
    await this.parkAll(park);
    for (const lane of touched) {
      if (lane.parkedBehind && lane.queue.length < o.windowPerBot / 2) void lanes.refill(lane);
      lanes.pump(lane);
    }
    // After the work orders of the batch: a cancel of one of them finds it (in memory or in the journal).
    if (cancels.length > 0) await cancelDeliveries(o, this.outcomes, cancels, batch);
  }

  /** One routed delivery: joined to its copy in memory, queued or parked, or settled by its row. */
  private take(
    e: ConsumedEvent<DeliveryEvent>,
    ack: () => void,
    rows: Map<string, StoredDelivery>,
    park: Map<Lane, Item[]>,
  ): Lane | undefined {
    const d = deliveryOf(e);
    const key = keyOfOrder(e);
    const held = this.lanes.known.get(key);
    if (held) {
      held.acks.push(ack);
      return undefined;
    }
    const row = rows.get(key);
    const delivery = {
      messageId: key,
      botId: d.chat?.botId ?? '',
      partition: e.partition,
      request: Buffer.from(this.o.deliveryTopic.codec.encode(e.record)),
      deliverBefore: d.deliverBefore ?? new Date(0),
    };
    const lane = this.lanes.of(delivery.botId, e.partition);
    if (!row) this.arrive(delivery, e, ack, park);
    else if (row.status === 'pending' || row.status === 'scheduled') {
      // Parked by an owner before: the lane reads it from the journal in its turn (a scheduled one once due).
      ack();
      lane.parkedBehind = true;
    } else this.settleKnown(lane, [ack], row);
    return lane;
  }

  /** A message read from the log, new to this replica: queued, or parked behind the bot's backlog. */
  private arrive(
    d: NewDelivery,
    e: ConsumedEvent<DeliveryEvent>,
    ack: () => void,
    park: Map<Lane, Item[]>,
  ): void {
    const lane = this.lanes.of(d.botId, d.partition);
    const item: Item = {
      offset: e.offset,
      messageId: d.messageId,
      botId: d.botId,
      partition: d.partition,
      request: e.record as DeliveryRequest,
      requestBytes: d.request,
      acks: [ack],
      state: startDelivery({
        type: 'Arrive',
        deadlineMs: d.deliverBefore.getTime(),
        expiresAtMs: expiresAtMsOf(e.record as DeliveryRequest),
      }),
    };
    if (lane.parkedBehind || lane.queue.length >= this.o.windowPerBot || this.scheduledAt(item)) {
      const list = park.get(lane) ?? [];
      list.push(item);
      park.set(lane, list);
      return;
    }
    this.lanes.enqueue(lane, item);
  }

  /**
   * Its send_at, while that is still ahead: it waits in the journal (scheduled), not in memory holding its
   * Kafka offset, however far ahead it is. The lane reads it shortly before its time (ScheduledDeliveries).
   */
  private scheduledAt(item: Item): Date | undefined {
    const sendAt = sendAtOf(item.request);
    return sendAt && sendAt.getTime() > (this.o.now ?? Date.now)() ? sendAt : undefined;
  }

  /** Parks what did not fit in memory; rows that were there already tell what became of those messages. */
  private async parkAll(park: Map<Lane, Item[]>): Promise<void> {
    const items = [...park.values()].flat();
    if (items.length === 0) return;
    const sendAts = new Map(items.map((i) => [i, this.scheduledAt(i)]));
    const existing = await this.o.journal.park(
      items.map((i) => ({
        messageId: i.messageId,
        botId: i.botId,
        partition: i.partition,
        request: i.requestBytes,
        deliverBefore: new Date(i.state.deadlineMs),
        sendAt: sendAts.get(i),
      })),
    );
    const rows = new Map(existing.map((r) => [r.messageId, r]));
    for (const [lane, list] of park) {
      // Only scheduled ones: nothing the lane could read now.
      if (list.some((i) => !sendAts.get(i))) this.lanes.parkedMore(lane);
      for (const item of list) {
        const row = rows.get(item.messageId);
        if (row && row.status !== 'pending' && row.status !== 'scheduled')
          this.settleKnown(lane, item.acks, row);
        // Parked: its row keeps it, and the lane reads it when its turn comes.
        else for (const ack of item.acks) ack();
      }
    }
  }

  /** A message read again whose row says it was decided or is claimed: republished, or watched. */
  private settleKnown(lane: Lane, acks: (() => void)[], row: StoredDelivery): void {
    if (row.status === 'sent' || row.status === 'failed') return this.outcomes.republish(row, acks);
    const watched = this.lanes.itemOfRow(row);
    watched.acks = acks;
    this.lanes.enqueue(lane, watched);
  }
}
