import { randomUUID } from 'node:crypto';
import { wakeableLoop } from '@mds/async';
import type { Logger } from '@mds/logging';
import type { ClaimedDelivery, DeliveryStore } from './ports.js';
import type { WakeUps } from './wake.js';
import type { Workers } from './workers.js';

/** Rows one claim takes at most. */
const MAX_CLAIM = 200;

export interface ClaimLoopOptions {
  store: Pick<DeliveryStore, 'claim'>;
  workers: Pick<Workers, 'free' | 'forClaim'>;
  wakeUps: Pick<WakeUps, 'listen'>;
  logger: Logger;
  now: () => Date;
  leaseSeconds: number;
  /** Longest sleep with nothing known to be due: rows other replicas gave up, leases run out. */
  pollMs: number;
  /** False while this replica should not take more work (its results cannot be stored). */
  mayClaim: () => boolean;
  /** Delivers a row now leased to this replica. */
  deliver: (claim: ClaimedDelivery) => void;
  onClaim?: (rows: number) => void;
}

/**
 * Takes due deliveries that no replica holds (retries, resends, notifications that found no free slot, and
 * leases that ran out), as many as this replica has slots for, and delivers them. Sleeps until woken (see
 * WakeUps) or for `pollMs`.
 */
export class ClaimLoop {
  private lastOk = true;
  private readonly loop: ReturnType<typeof wakeableLoop>;

  constructor(private readonly o: ClaimLoopOptions) {
    this.loop = wakeableLoop({
      // A full claim may have left more due: claim again at once.
      pass: async () => {
        const { asked, claimed } = await this.claimOnce();
        return claimed > 0 && claimed === asked;
      },
      idleMs: o.pollMs,
      // A wake-up during a pass claims again at once, unless claiming just failed or no slot is free.
      rerunWhenWoken: () => this.lastOk && o.workers.free() > 0,
      onError: (error) => o.logger.error({ err: error }, 'could not claim due deliveries; retrying'),
    });
    o.wakeUps.listen(() => this.loop.wake());
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** False while the last claim failed. */
  healthy(): boolean {
    return this.lastOk;
  }

  private async claimOnce(): Promise<{ asked: number; claimed: number }> {
    const free = this.o.workers.free();
    if (free <= 0 || !this.o.mayClaim()) return { asked: 0, claimed: 0 };
    const asked = Math.min(free, MAX_CLAIM);
    try {
      const rows = await this.o.store.claim({
        now: this.o.now(),
        limit: asked,
        leaseId: randomUUID(),
        leaseSeconds: this.o.leaseSeconds,
        ...this.o.workers.forClaim(),
      });
      this.o.onClaim?.(rows.length);
      this.lastOk = true;
      for (const row of rows) this.o.deliver(row);
      return { asked, claimed: rows.length };
    } catch (error) {
      this.lastOk = false;
      this.o.logger.error({ err: error }, 'could not claim due deliveries; retrying');
      return { asked, claimed: 0 };
    }
  }
}
