import { attemptDelivery, handedBack, type AttemptPorts } from './attempt.js';
import { endpointKey, type ClaimedDelivery, type Completion, type EndpointKey } from './ports.js';
import type { Slots } from './slots.js';

interface Waiting {
  claim: ClaimedDelivery;
  run: (attempt: Promise<Completion>) => void;
}

/**
 * The one way into an attempt, within this replica's slots (at most so many in flight in all and to one
 * endpoint, so a slow endpoint holds only its own). A new delivery is attempted at once if its endpoint has a
 * free slot (`offer`); a claimed one, leased to this replica, at once or as soon as its endpoint gives a slot
 * back (`take`): a slot given back goes straight to the next claimed row waiting for that endpoint.
 */
export class Workers {
  private readonly waiting = new Map<string, Waiting[]>();
  private readonly running = new Set<Promise<Completion>>();

  constructor(
    private readonly slots: Slots,
    private readonly ports: AttemptPorts,
  ) {}

  /** Attempts a new delivery now if its endpoint has a free slot; undefined if not (it waits for a claim). */
  offer(claim: ClaimedDelivery): Promise<Completion> | undefined {
    return this.slots.take(claim) ? this.start(claim) : undefined;
  }

  /** Attempts a claimed delivery now, or once its endpoint has a slot again; resolves with its result. */
  take(claim: ClaimedDelivery): Promise<Completion> {
    if (this.slots.take(claim)) return this.start(claim);
    return new Promise((resolve) => {
      const key = endpointKey(claim);
      const queue = this.waiting.get(key) ?? [];
      queue.push({ claim, run: resolve });
      this.waiting.set(key, queue);
    });
  }

  inFlight(): number {
    return this.slots.inFlight();
  }

  /** Slots free in all, and what a claim may take per endpoint. */
  free(): number {
    return this.slots.free();
  }

  forClaim(): ReturnType<Slots['forClaim']> {
    return this.slots.forClaim();
  }

  /**
   * Hands the claimed rows still waiting for a slot back (due now, for any replica: their results say so)
   * and resolves once every attempt started has ended.
   */
  async stop(at: Date): Promise<void> {
    for (const queue of this.waiting.values())
      for (const { claim, run } of queue) run(Promise.resolve(handedBack(claim, at)));
    this.waiting.clear();
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private start(claim: ClaimedDelivery): Promise<Completion> {
    const attempt = attemptDelivery(this.ports, claim).finally(() => this.release(claim));
    this.running.add(attempt);
    const forget = () => void this.running.delete(attempt);
    attempt.then(forget, forget);
    return attempt;
  }

  /** The endpoint answered: its slot goes to a claimed row waiting for it, else back to the pool. */
  private release(endpoint: EndpointKey): void {
    const key = endpointKey(endpoint);
    const queue = this.waiting.get(key);
    const next = queue?.shift();
    if (queue?.length === 0) this.waiting.delete(key);
    if (next) next.run(this.start(next.claim));
    else this.slots.release(endpoint);
  }
}
