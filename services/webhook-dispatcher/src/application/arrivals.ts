import { randomUUID } from 'node:crypto';
import type { EventPublisher } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { attemptDelivery, type AttemptPorts } from './attempt.js';
import type {
  Arrival,
  ClaimedDelivery,
  Completion,
  DeliveryStore,
  EndpointKey,
  NewDelivery,
} from './ports.js';
import type { Slots } from './slots.js';

export interface ArrivalOptions {
  store: Pick<DeliveryStore, 'ingest' | 'stored'>;
  publisher: Pick<EventPublisher, 'publish'>;
  slots: Slots;
  attempt: AttemptPorts;
  logger: Logger;
  leaseSeconds: number;
  /**
   * How long the arrival of a batch waits for its first attempts: those answered by then are stored once,
   * with their result; slower ones are stored leased to this replica and updated when they end.
   */
  firstAttemptWaitMs: number;
  /** Whether this replica may start attempts now (it runs, and can store results). */
  mayRun: () => boolean;
  /** A slot of the endpoint is free again. */
  released: (endpoint: EndpointKey) => void;
  /** Results of first attempts stored with their rows. */
  onStored: (stored: Completion[]) => Promise<void>;
  /** A slow first attempt ended after its row was stored leased: its result is stored as any other. */
  onLateResult: (completion: Completion) => Promise<void>;
  /** Deliveries stored to wait for a claim. */
  onWaiting: () => void;
}

/**
 * What the dispatcher does with the notifications one fetch brought. Each is attempted at once where its
 * endpoint has a free slot; a row is stored for each by one statement, after the attempts answered within a
 * moment, so a delivery that succeeds at once is written once. An attempt is never made twice for one
 * arrival, even if storing fails and the batch comes again (the attempts of a batch are kept until stored).
 */
export function createArrivals(o: ArrivalOptions) {
  /** First attempts in flight, or ended with their row not stored yet, by webhook id. */
  const attempts = new Map<string, Promise<Completion>>();

  function start(d: NewDelivery, leaseId: string): Promise<Completion> {
    const claim: ClaimedDelivery = { ...d, leaseId, attempts: 0, manual: false };
    const result = attemptDelivery(o.attempt, claim).finally(() => {
      o.slots.release(d);
      o.released(d);
    });
    attempts.set(d.webhookId, result);
    // Kept until stored; a failed attempt (a bug, not an answer) is forgotten, and its row retried.
    result.catch((error: unknown) => {
      attempts.delete(d.webhookId);
      o.logger.error({ err: error, webhookId: d.webhookId }, 'delivery failed unexpectedly');
    });
    return result;
  }

  /** Settles the arrival of each delivery: done within the wait, still running, or waiting for a slot. */
  async function settle(
    deliveries: NewDelivery[],
    leaseId: string,
  ): Promise<{ arrivals: Arrival[]; late: Map<string, Promise<Completion>> }> {
    const running = new Map<string, Promise<Completion>>();
    for (const d of deliveries) {
      const earlier = attempts.get(d.webhookId);
      if (earlier) running.set(d.webhookId, earlier);
      else if (o.mayRun() && o.slots.take(d)) running.set(d.webhookId, start(d, leaseId));
    }
    const ended = new Map<string, Completion>();
    const waited = new Promise((r) => setTimeout(r, o.firstAttemptWaitMs));
    await Promise.race([
      waited,
      Promise.allSettled(
        [...running].map(([id, p]) => p.then((c) => void ended.set(id, c)).catch(() => undefined)),
      ),
    ]);
    const late = new Map([...running].filter(([id]) => !ended.has(id)));
    const arrivals = deliveries.map((delivery): Arrival => {
      const completion = ended.get(delivery.webhookId);
      if (completion)
        return {
          delivery,
          state: { kind: 'done', completion: { ...completion, claim: { ...completion.claim, leaseId } } },
        };
      return { delivery, state: { kind: late.has(delivery.webhookId) ? 'leased' : 'pending' } };
    });
    return { arrivals, late };
  }

  return {
    /** Resolves once every notification of the batch has its row (or had one already). */
    async accept(incoming: readonly { delivery: NewDelivery; redelivery: boolean }[]): Promise<void> {
      // The same event twice in one batch (the log may hold copies) is one delivery.
      const unique = [...new Map(incoming.map((i) => [i.delivery.webhookId, i])).values()];
      // Read again after a restart or a rebalance: those stored before are someone's already.
      const known = await o.store.stored(
        unique.filter((i) => i.redelivery).map((i) => i.delivery.sourceEventId),
      );
      const deliveries = unique.map((i) => i.delivery).filter((d) => !known.has(d.sourceEventId));
      if (deliveries.length === 0) return;
      const leaseId = randomUUID();
      const { arrivals, late } = await settle(deliveries, leaseId);
      const done = arrivals.flatMap((a) => (a.state.kind === 'done' ? [a.state.completion] : []));
      // The attempts happened, whatever is stored: their events go out first.
      const events = done.flatMap((c) => c.events);
      if (events.length > 0) await o.publisher.publish(events);
      const stored = await o.store.ingest(arrivals, { leaseId, seconds: o.leaseSeconds });
      for (const c of done) attempts.delete(c.claim.webhookId);
      await o.onStored(done.filter((c) => stored.has(c.claim.webhookId)));
      for (const [id, result] of late) {
        // Stored leased to this replica: its result updates the row when it comes.
        if (!stored.has(id)) continue;
        void result.then(
          async (completion) => {
            attempts.delete(id);
            await o.onLateResult({ ...completion, claim: { ...completion.claim, leaseId } });
          },
          () => undefined,
        );
      }
      if (arrivals.some((a) => a.state.kind === 'pending' && stored.has(a.delivery.webhookId))) o.onWaiting();
    },
    /** First attempts still running (they hold slots and are awaited on stop). */
    inFlight: () => [...attempts.values()],
  };
}
