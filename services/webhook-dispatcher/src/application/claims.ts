import { randomUUID } from 'node:crypto';
import { wakeableLoop } from '@mds/async';
import type { Logger } from '@mds/logging';
import { endpointKey, type ClaimedDelivery, type DeliveryStore, type EndpointKey } from './ports.js';
import type { Slots } from './slots.js';

export interface ClaimLoopOptions {
  store: Pick<DeliveryStore, 'claim'>;
  slots: Slots;
  logger: Logger;
  now: () => Date;
  leaseSeconds: number;
  /** Longest sleep with nothing known to be due: rows other replicas gave up, leases run out. */
  pollMs: number;
  /** False while this replica should not take more work (its results cannot be stored). */
  mayClaim: () => boolean;
  run: (claim: ClaimedDelivery) => void;
  onClaim?: (rows: number) => void;
}

/**
 * Takes due deliveries that no replica holds (retries, resends, notifications that found no free slot, and
 * leases that ran out) and runs them within the slots. Sleeps until poked, until the earliest retry it knows
 * of is due, or for `pollMs`.
 */
export function createClaimLoop(o: ClaimLoopOptions) {
  let lastOk = true;
  let dueTimer: NodeJS.Timeout | undefined;
  let dueAt = Number.POSITIVE_INFINITY;
  /** Claimed rows whose endpoint had no free slot left when they came: run as its slots free up. */
  const waiting = new Map<string, ClaimedDelivery[]>();

  const loop = wakeableLoop({
    // A full claim may have left more due: claim again at once.
    pass: async () => {
      const { asked, claimed } = await claimOnce();
      return claimed > 0 && claimed === asked;
    },
    idleMs: o.pollMs,
    // A poke during a pass claims again at once, unless claiming just failed or no slot is free.
    rerunWhenWoken: () => lastOk && o.slots.free() > 0,
    onError: (error) => o.logger.error({ err: error }, 'could not claim due deliveries; retrying'),
  });
  const poke = () => loop.wake();

  function runOrWait(row: ClaimedDelivery): void {
    if (o.slots.take(row)) return o.run(row);
    const key = endpointKey(row);
    const queue = waiting.get(key) ?? [];
    queue.push(row);
    waiting.set(key, queue);
  }

  async function claimOnce(): Promise<{ asked: number; claimed: number }> {
    const free = o.slots.free();
    if (free <= 0 || !o.mayClaim()) return { asked: 0, claimed: 0 };
    const asked = Math.min(free, 200);
    try {
      const rows = await o.store.claim({
        now: o.now(),
        limit: asked,
        leaseId: randomUUID(),
        leaseSeconds: o.leaseSeconds,
        ...o.slots.forClaim(),
      });
      o.onClaim?.(rows.length);
      lastOk = true;
      for (const row of rows) runOrWait(row);
      return { asked, claimed: rows.length };
    } catch (error) {
      lastOk = false;
      o.logger.error({ err: error }, 'could not claim due deliveries; retrying');
      return { asked, claimed: 0 };
    }
  }

  return {
    start: () => loop.start(),
    poke,
    /** A slot of the endpoint was given back: a claimed row waiting for it runs now. */
    released(endpoint: EndpointKey): void {
      const key = endpointKey(endpoint);
      const queue = waiting.get(key);
      const next = queue?.shift();
      if (queue?.length === 0) waiting.delete(key);
      if (next) runOrWait(next);
    },
    /** A retry this replica stored is due at `at`: claim then, if nothing earlier wakes the loop. */
    dueAt(at: Date): void {
      const ms = at.getTime();
      if (ms >= dueAt && dueTimer) return;
      clearTimeout(dueTimer);
      dueAt = ms;
      dueTimer = setTimeout(
        () => {
          dueTimer = undefined;
          dueAt = Number.POSITIVE_INFINITY;
          poke();
        },
        Math.max(0, ms - o.now().getTime()),
      );
    },
    async stop() {
      clearTimeout(dueTimer);
      await loop.stop();
    },
    healthy: () => lastOk,
  };
}

export type ClaimLoop = ReturnType<typeof createClaimLoop>;
