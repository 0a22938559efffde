/**
 * Accept -> outcome latencies are counted in fixed buckets (upper bounds in milliseconds, the last one open),
 * so percentiles over any window are a sum of small per-minute rows instead of a scan of every message.
 */
export const LATENCY_BOUNDS_MS = [
  25, 50, 100, 200, 300, 500, 750, 1_000, 1_500, 2_000, 3_000, 5_000, 10_000, 30_000, 60_000, 300_000,
  900_000, 3_600_000,
] as const;

/** The bucket of a latency: index into LATENCY_BOUNDS_MS, or its length for anything longer. */
export function latencyBucket(ms: number): number {
  for (let i = 0; i < LATENCY_BOUNDS_MS.length; i++) if (ms <= LATENCY_BOUNDS_MS[i]!) return i;
  return LATENCY_BOUNDS_MS.length;
}

/**
 * The q-quantile (0 < q <= 1) of bucketed counts, as the upper bound of the bucket it falls in (an upper
 * estimate, never an understatement); null without data, Infinity when it falls past the last bound.
 */
export function quantileOf(counts: ReadonlyMap<number, number>, q: number): number | null {
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const bucket of [...counts.keys()].sort((a, b) => a - b)) {
    seen += counts.get(bucket)!;
    if (seen >= rank) return LATENCY_BOUNDS_MS[bucket] ?? Number.POSITIVE_INFINITY;
  }
  return Number.POSITIVE_INFINITY;
}
