const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Endpoints remembered before the ones whose turn has passed are forgotten. */
const PRUNE_AT = 10_000;

/**
 * Endpoints' own rate limits, in this replica's memory: requests to an endpoint limited to N per second start at
 * least 1/N s apart (each replica paces its own requests, so R replicas may send up to R × N per second). A
 * request waiting for its turn holds its slot, so no more than the endpoint's slots ever wait.
 */
export function createPacer(now: () => number = () => performance.now()) {
  const nextTurn = new Map<string, number>();

  function prune(t: number): void {
    if (nextTurn.size < PRUNE_AT) return;
    for (const [key, at] of nextTurn) if (at <= t) nextTurn.delete(key);
  }

  return {
    /** Resolves when the endpoint may be sent the next request (at once without a limit). */
    async turn(key: string, perSecond: number | undefined): Promise<void> {
      if (!perSecond || perSecond <= 0) return;
      const t = now();
      prune(t);
      const at = Math.max(t, nextTurn.get(key) ?? 0);
      nextTurn.set(key, at + 1_000 / perSecond);
      if (at > t) await sleep(at - t);
    },
  };
}

export type Pacer = ReturnType<typeof createPacer>;
