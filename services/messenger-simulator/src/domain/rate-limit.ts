export interface BucketSpec {
  /** Tokens added per second. */
  ratePerS: number;
  /** Bucket size: how many calls may come at once after a quiet spell. */
  burst: number;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
  spec: BucketSpec;
}

/**
 * Token buckets by key ("tg:bot:1", "tg:chat:1:42", ...). `take` consumes one token from every named
 * bucket or from none, so a call refused by the chat limit does not use up the bot's allowance.
 */
export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep = 0;

  constructor(private readonly enabled: boolean) {}

  /** 0 when allowed (tokens taken), otherwise the milliseconds until every bucket has a token. */
  take(now: number, wanted: ReadonlyArray<{ key: string; spec: BucketSpec }>): number {
    if (!this.enabled) return 0;
    this.sweep(now);
    let waitMs = 0;
    const buckets = wanted.map(({ key, spec }) => {
      const bucket = this.refill(key, spec, now);
      if (bucket.tokens < 1) waitMs = Math.max(waitMs, ((1 - bucket.tokens) / spec.ratePerS) * 1000);
      return bucket;
    });
    if (waitMs > 0) return waitMs;
    for (const bucket of buckets) bucket.tokens -= 1;
    return 0;
  }

  clear(): void {
    this.buckets.clear();
  }

  private refill(key: string, spec: BucketSpec, now: number): Bucket {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = { tokens: spec.burst, updatedAt: now, spec };
      this.buckets.set(key, bucket);
      return bucket;
    }
    const elapsedS = Math.max(0, now - bucket.updatedAt) / 1000;
    bucket.tokens = Math.min(spec.burst, bucket.tokens + elapsedS * spec.ratePerS);
    bucket.updatedAt = now;
    return bucket;
  }

  /** A full bucket is the same as no bucket: forget those once a minute so memory stays bounded. */
  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [key, b] of this.buckets) {
      if (b.tokens + ((now - b.updatedAt) / 1000) * b.spec.ratePerS >= b.spec.burst) this.buckets.delete(key);
    }
  }
}
