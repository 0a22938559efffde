export interface RetryOptions {
  /** First wait, doubled after each failure up to `maxMs`. */
  initialMs: number;
  maxMs: number;
  /**
   * False to stop retrying (the service stops, a deadline passed): the last error is thrown. `waitMs` is how
   * long it would wait before the next attempt.
   */
  shouldRetry?: (error: unknown, attempt: number, waitMs: number) => boolean;
  onRetry?: (error: unknown, attempt: number, waitMs: number) => void;
}

/** initial, 2 x initial, 4 x initial ... capped at max. */
export function backoffDelays(initialMs: number, maxMs: number): () => number {
  let next = initialMs;
  return () => {
    const now = next;
    next = Math.min(maxMs, next * 2);
    return now;
  };
}

/** Runs `work` until it resolves, waiting longer after each failure, as long as `shouldRetry` agrees. */
export async function retryUntil<T>(work: () => Promise<T>, o: RetryOptions): Promise<T> {
  const delay = backoffDelays(o.initialMs, o.maxMs);
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      const waitMs = delay();
      if (o.shouldRetry && !o.shouldRetry(error, attempt, waitMs)) throw error;
      o.onRetry?.(error, attempt, waitMs);
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }
}
