import { randomUUID } from 'node:crypto';
import type { EventPublisher } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { Arrival, Completion, DeliveryStore, NewDelivery } from './ports.js';
import type { ResultWriter } from './results.js';
import type { WakeUps } from './wake.js';
import type { Workers } from './workers.js';

export interface ArrivalOptions {
  store: Pick<DeliveryStore, 'ingest' | 'stored'>;
  publisher: Pick<EventPublisher, 'publish'>;
  workers: Pick<Workers, 'offer'>;
  /** Where a slow first attempt's result goes once its row is stored. */
  results: Pick<ResultWriter, 'add'>;
  wakeUps: Pick<WakeUps, 'now'>;
  logger: Logger;
  leaseSeconds: number;
  /**
   * How long the arrival of a batch waits for its first attempts: those answered by then are stored once,
   * with their result; slower ones are stored leased to this replica and updated when they end.
   */
  firstAttemptWaitMs: number;
  /** Whether this replica may start attempts now (it runs, and can store results). */
  mayRun: () => boolean;
  /** Results of first attempts stored with their rows. */
  afterStored: (stored: Completion[]) => Promise<void>;
}

type Incoming = readonly { delivery: NewDelivery; redelivery: boolean }[];

/** The result of a first attempt, as the row stored under `leaseId` holds it. */
const underLease = (c: Completion, leaseId: string): Completion => ({ ...c, claim: { ...c.claim, leaseId } });

/**
 * What the dispatcher does with the notifications one fetch brought. Each is attempted at once where its
 * endpoint has a free slot; a row is stored for each by one statement, after the attempts answered within a
 * moment, so a delivery that succeeds at once is written once. An attempt is never made twice for one
 * arrival, even if storing fails and the batch comes again (the attempts of a batch are kept until stored).
 */
export class Arrivals {
  /** First attempts in flight, or ended with their row not stored yet, by webhook id. */
  private readonly attempts = new Map<string, Promise<Completion>>();

  constructor(private readonly o: ArrivalOptions) {}

  /** Resolves once every notification of the batch has its row (or had one already). */
  async accept(incoming: Incoming): Promise<void> {
    const deliveries = await this.unknown(incoming);
    if (deliveries.length === 0) return;
    const leaseId = randomUUID();
    const { arrivals, late } = await this.settle(deliveries, leaseId);
    const done = arrivals.flatMap((a) => (a.state.kind === 'done' ? [a.state.completion] : []));
    // The attempts happened, whatever is stored: their events go out first.
    const events = done.flatMap((c) => c.events);
    if (events.length > 0) await this.o.publisher.publish(events);
    const stored = await this.o.store.ingest(arrivals, { leaseId, seconds: this.o.leaseSeconds });
    for (const c of done) this.attempts.delete(c.claim.webhookId);
    await this.o.afterStored(done.filter((c) => stored.has(c.claim.webhookId)));
    for (const [id, result] of late) if (stored.has(id)) this.storeWhenDone(id, result, leaseId);
    if (arrivals.some((a) => a.state.kind === 'pending' && stored.has(a.delivery.webhookId)))
      this.o.wakeUps.now();
  }

  /** The batch without copies, and without what was stored before a restart or a rebalance. */
  private async unknown(incoming: Incoming): Promise<NewDelivery[]> {
    // The same event twice in one batch (the log may hold copies) is one delivery.
    const unique = [...new Map(incoming.map((i) => [i.delivery.webhookId, i])).values()];
    // Read again after a restart or a rebalance: those stored before are someone's already.
    const known = await this.o.store.stored(
      unique.filter((i) => i.redelivery).map((i) => i.delivery.sourceEventId),
    );
    return unique.map((i) => i.delivery).filter((d) => !known.has(d.sourceEventId));
  }

  /** First attempts of the batch: those already running for it, and new ones where a slot is free. */
  private startAll(deliveries: NewDelivery[], leaseId: string): Map<string, Promise<Completion>> {
    const running = new Map<string, Promise<Completion>>();
    for (const d of deliveries) {
      const earlier = this.attempts.get(d.webhookId);
      const attempt =
        earlier ??
        (this.o.mayRun() ? this.o.workers.offer({ ...d, leaseId, attempts: 0, manual: false }) : undefined);
      if (!attempt) continue;
      running.set(d.webhookId, attempt);
      if (earlier) continue;
      this.attempts.set(d.webhookId, attempt);
      // Kept until stored; a failed attempt (a bug, not an answer) is forgotten, and its row retried.
      attempt.catch((error: unknown) => {
        this.attempts.delete(d.webhookId);
        this.o.logger.error({ err: error, webhookId: d.webhookId }, 'delivery failed unexpectedly');
      });
    }
    return running;
  }

  /** Settles the arrival of each delivery: done within the wait, still running, or waiting for a slot. */
  private async settle(deliveries: NewDelivery[], leaseId: string) {
    const running = this.startAll(deliveries, leaseId);
    const ended = new Map<string, Completion>();
    await Promise.race([
      new Promise((r) => setTimeout(r, this.o.firstAttemptWaitMs)),
      Promise.allSettled(
        [...running].map(([id, p]) => p.then((c) => void ended.set(id, c)).catch(() => undefined)),
      ),
    ]);
    const late = new Map([...running].filter(([id]) => !ended.has(id)));
    const arrivals = deliveries.map((delivery): Arrival => {
      const completion = ended.get(delivery.webhookId);
      if (completion)
        return { delivery, state: { kind: 'done', completion: underLease(completion, leaseId) } };
      return { delivery, state: { kind: late.has(delivery.webhookId) ? 'leased' : 'pending' } };
    });
    return { arrivals, late };
  }

  /** A slow first attempt whose row is stored leased to this replica: its result updates the row when it comes. */
  private storeWhenDone(id: string, result: Promise<Completion>, leaseId: string): void {
    void result.then(
      async (completion) => {
        this.attempts.delete(id);
        await this.o.results.add(underLease(completion, leaseId));
      },
      () => undefined,
    );
  }
}
