import type { DeliveryEvent } from '@mds/contracts';
import type { BatchContext, ConsumedEvent } from '@mds/kafka';
import type { DeliveryOptions } from './delivery-options.js';
import { Intake } from './intake.js';
import { LaneSet } from './lane-set.js';
import { createOutcomePublisher } from './outcomes.js';
import { ScheduledDeliveries } from './scheduled.js';

export { claimLifeMs, type DeliveryOptions } from './delivery-options.js';

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
  const stopping = new AbortController();
  const outcomes = createOutcomePublisher({
    publisher: o.publisher,
    journal: o.journal,
    logger: o.logger,
    stopped: stopping.signal,
    track,
  });
  const lanes = new LaneSet(o, outcomes, track, now, stopping);
  const intake = new Intake(o, lanes, outcomes);
  const scheduled = new ScheduledDeliveries(o, lanes, now);
  scheduled.start();

  return {
    /**
     * The consumer's handler: queues the routed deliveries it reads. Each holds its Kafka offset until it
     * is decided and published, or parked in the journal.
     */
    store: (events: ConsumedEvent<DeliveryEvent>[], batch: Pick<BatchContext, 'defer'>) =>
      intake.store(events, batch),
    /** The delivery topic's partitions this replica owns now (empty while the group rebalances). */
    assign: (partitions: readonly number[]) => lanes.assign(partitions),
    /** Stops starting calls; waits for the ones in flight to be decided and published. */
    async stop(): Promise<void> {
      lanes.stop();
      scheduled.stop();
      while (work.size > 0) await Promise.allSettled([...work]);
    },
    /** For the poller: waits for, and takes, one slot of the bot's rate (MAX counts polls as requests). */
    takeSlot: (botId: string, partition: number, signal: AbortSignal) =>
      lanes.takeSlot(botId, partition, signal),
    queuedCount: () => lanes.known.size,
    /** Per-chat rate schedules held in memory, over every lane. */
    chatSchedules: () => [...lanes.all()].reduce((n, lane) => n + lane.chatSchedules(), 0),
  };
}
