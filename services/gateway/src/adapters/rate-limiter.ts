import type { Knex } from '@mds/db';

export interface Limit {
  /** Bucket name, e.g. "key:<id>:send". */
  bucket: string;
  /** Sustained tokens per second. */
  rate: number;
  /** Most tokens the bucket holds (the burst). */
  capacity: number;
}

export type Verdict =
  { allowed: true; remaining: number } | { allowed: false; retryAfterSeconds: number; limit: Limit };

interface Local {
  tokens: number;
  expiresAt: number;
  /** Tokens left centrally after the last lease, for the RateLimit header. */
  centralRemaining: number;
  leasing?: Promise<void>;
  retryAt: number;
  /** Requests of this replica waiting for a token of the bucket: the next lease asks for all of them. */
  waiting: number;
}

/** Lease rounds a request waits through before it is refused (two serve a burst; the rest absorb races). */
const MAX_LEASE_ROUNDS = 8;

/**
 * Token buckets shared by every gateway replica through PostgreSQL. The central bucket refills at `rate`;
 * a replica leases a slice of it (a tenth of a second's worth, at least 1, or as many as requests are
 * waiting for a token) and spends that locally, so the database sees one small transaction per slice, not
 * per request, and a burst within the bucket is admitted whole. The sum of what all replicas admit never
 * exceeds the central bucket; a lease unspent within a second is dropped, which can only admit less.
 */
export function createRateLimiter(o: { db: Knex; now?: () => number; leaseTtlMs?: number }) {
  const local = new Map<string, Local>();
  const now = o.now ?? Date.now;
  const leaseTtlMs = o.leaseTtlMs ?? 1_000;

  const slice = (limit: Limit) => Math.max(1, Math.ceil(limit.rate / 10));

  async function lease(limit: Limit, state: Local): Promise<void> {
    // A burst of concurrent requests leases for all of them at once: a slice each would serve one
    // round of waiters per transaction and refuse the rest while the bucket still holds tokens.
    const want = Math.max(slice(limit), state.waiting);
    const result = await o.db.transaction(async (trx) => {
      await trx('rate_buckets')
        .insert({ bucket: limit.bucket, tokens: limit.capacity, updated_at: trx.fn.now() })
        .onConflict('bucket')
        .ignore();
      const row = await trx('rate_buckets')
        .where({ bucket: limit.bucket })
        .forUpdate()
        .first<{ tokens: number; elapsed: number }>(
          'tokens',
          trx.raw('extract(epoch from (clock_timestamp() - updated_at))::float8 as elapsed'),
        );
      const available = Math.min(limit.capacity, row.tokens + Math.max(0, row.elapsed) * limit.rate);
      const granted = Math.min(Math.floor(available), want);
      await trx('rate_buckets')
        .where({ bucket: limit.bucket })
        .update({ tokens: available - granted, updated_at: trx.raw('clock_timestamp()') });
      return { granted, left: available - granted };
    });
    state.tokens += result.granted;
    state.expiresAt = now() + leaseTtlMs;
    state.centralRemaining = Math.floor(result.left);
    state.retryAt = result.granted > 0 ? 0 : now() + ((1 - result.left) / limit.rate) * 1000;
  }

  async function take(limit: Limit): Promise<Verdict> {
    let state = local.get(limit.bucket);
    if (!state) {
      state = { tokens: 0, expiresAt: 0, centralRemaining: limit.capacity, retryAt: 0, waiting: 0 };
      local.set(limit.bucket, state);
    }
    const startLease = (s: Local) =>
      (s.leasing ??= lease(limit, s).finally(() => {
        s.leasing = undefined;
      }));
    for (let round = 0; round < MAX_LEASE_ROUNDS; round++) {
      if (state.expiresAt <= now()) state.tokens = 0;
      if (state.tokens >= 1) {
        state.tokens -= 1;
        // Renew before running dry or expiring, off the request path, so requests rarely wait for a lease.
        if (state.tokens < slice(limit) / 2 || state.expiresAt - now() < leaseTtlMs / 5) {
          // A failed renewal here is retried by the next request that finds the tokens gone.
          startLease(state).catch(() => undefined);
        }
        return { allowed: true, remaining: Math.floor(state.tokens) + state.centralRemaining };
      }
      // Refused recently: do not ask the database again before a token can exist.
      if (state.retryAt > now()) break;
      state.waiting++;
      try {
        await startLease(state);
      } finally {
        state.waiting--;
      }
    }
    return {
      allowed: false,
      retryAfterSeconds: Math.max(1, Math.ceil((state.retryAt - now()) / 1000)),
      limit,
    };
  }

  return {
    /** Takes one token from every bucket, in order; the first refusal answers. */
    async check(limits: Limit[]): Promise<Verdict> {
      let remaining = Number.POSITIVE_INFINITY;
      for (const limit of limits) {
        const verdict = await take(limit);
        if (!verdict.allowed) return verdict;
        remaining = Math.min(remaining, verdict.remaining);
      }
      return { allowed: true, remaining };
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
