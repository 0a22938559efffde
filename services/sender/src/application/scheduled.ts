import type { DeliveryOptions } from './delivery-options.js';
import type { LaneSet } from './lane-set.js';
import type { Lane } from './lanes.js';

/**
 * Messages with a send_at wait in the journal as scheduled rows, holding no Kafka offset and no memory. Every
 * `schedulePollMs` the scheduled rows of the partitions this replica owns that are due within
 * `scheduleLeadMs` become pending (with a new seq) and their lanes read them; each then waits in its lane
 * for its time (its row's not_before), so it is sent within a poll of it, at the bot's rate. A restart or a
 * rebalance loses nothing: the rows stay in the journal, and pending ones are adopted with the partition. (A
 * crash between promoting rows of a partition that had just gone elsewhere and scheduling them again leaves
 * them pending, read by the next refill or adoption of their bot.)
 */
export class ScheduledDeliveries {
  private timer: NodeJS.Timeout | undefined;
  private readonly pollMs: number;
  private readonly leadMs: number;

  constructor(
    private readonly o: Pick<DeliveryOptions, 'journal' | 'logger' | 'schedulePollMs' | 'scheduleLeadMs'>,
    private readonly lanes: LaneSet,
    private readonly now: () => number,
  ) {
    this.pollMs = o.schedulePollMs ?? 250;
    this.leadMs = o.scheduleLeadMs ?? 1_000;
  }

  start(): void {
    const next = () => {
      this.timer = setTimeout(
        () => void this.promote().finally(() => this.lanes.stopping || next()),
        this.pollMs,
      );
      this.timer.unref();
    };
    next();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private async promote(): Promise<void> {
    const { lanes } = this;
    if (lanes.paused || lanes.stopping) return;
    try {
      const due = await this.o.journal.promoteDue([...lanes.owned], new Date(this.now() + this.leadMs));
      // A partition that went elsewhere while they were promoted: its new owner may have read its open work
      // already, and would not see these. Scheduled again, they are its to promote.
      const lost = due.filter((d) => !lanes.owned.has(d.partition));
      if (lost.length > 0) await this.o.journal.unpromote(lost.map((d) => d.messageId));
      const touched = new Set<Lane>();
      for (const { botId, partition } of due)
        if (lanes.owned.has(partition)) touched.add(lanes.of(botId, partition));
      for (const lane of touched) {
        lanes.parkedMore(lane);
        void lanes.refill(lane);
      }
    } catch (error) {
      this.o.logger.error({ err: error }, 'could not read the scheduled deliveries due; retrying');
    }
  }
}
