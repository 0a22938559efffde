import type { Knex } from '@mds/db';
import type { Limit, RateLimiter, Verdict } from '../application/ports.js';

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

/**
 * Tokens a replica leases at a time: a quarter of a second's worth, at least 1 (an eighth of the default
 * bucket). Larger leases mean fewer database writes per request (a bucket renews after half a lease is spent).
 */
const leaseSize = (limit: Limit) => Math.max(1, Math.ceil(limit.rate / 4));

/** Lease rounds a request waits through before it is refused (two serve a burst; the rest absorb races). */
const MAX_LEASE_ROUNDS = 8;

interface LeaseRequest {
  limit: Limit;
  state: Local;
  done: Array<{ resolve: (r: { granted: number; left: number }) => void; reject: (e: unknown) => void }>;
}

/**
 * Token buckets shared by every gateway replica through PostgreSQL. The central bucket refills at `rate`;
 * a replica leases a slice of it (a quarter of a second's worth, at least 1, or as many as requests are
 * waiting for a token) and spends that locally, so the database sees one small statement per slice, not
 * per request, and a burst within the bucket is admitted whole. The sum of what all replicas admit never
 * exceeds the central bucket; a lease unspent within 30 s is dropped, which can only admit less.
 *
 * Leases of all buckets are taken by one statement at a time (an upsert of every bucket asked for since the
 * last one): each active bucket renews at least every few seconds whatever its traffic, so with many companies
 * the leases, one transaction each, would otherwise keep the database and the connection pool busy.
 */
export function createRateLimiter(o: { db: Knex; now?: () => number; leaseTtlMs?: number }): RateLimiter {
  const local = new Map<string, Local>();
  const now = o.now ?? Date.now;
  // Long enough that a quiet bucket (a company sending one message a second) renews its lease when half of
  // it is spent, not on a timer; short enough that tokens a replica holds unspent lapse within the minute.
  // It bounds when leased tokens are spent, never how many.
  const leaseTtlMs = o.leaseTtlMs ?? 30_000;
  let asked = new Map<string, LeaseRequest>();
  let leasing = false;

  /** One upsert for every bucket in `batch`, in bucket order (replicas lock rows in the same order). */
  async function leaseBatch(batch: LeaseRequest[]): Promise<Map<string, { granted: number; left: number }>> {
    batch.sort((a, b) => (a.limit.bucket < b.limit.bucket ? -1 : a.limit.bucket > b.limit.bucket ? 1 : 0));
    // In ON CONFLICT DO UPDATE the bucket's columns are the stored row, `excluded` the one proposed, whose
    // `granted` carries what this replica wants (at most the capacity, so never more than is available).
    const available = `least(excluded.capacity, b.tokens + greatest(0, extract(epoch from (clock_timestamp() - b.updated_at))::float8) * excluded.rate)`;
    const { rows } = await o.db.raw<{ rows: { bucket: string; tokens: number; granted: number }[] }>(
      `insert into rate_buckets as b (bucket, tokens, granted, rate, capacity, updated_at)
       select v.bucket, v.capacity - least(floor(v.capacity), v.want), least(floor(v.capacity), v.want),
              v.rate, v.capacity, clock_timestamp()
       from unnest(?::text[], ?::float8[], ?::float8[], ?::float8[]) with ordinality as v(bucket, rate, capacity, want, n)
       order by v.n
       on conflict (bucket) do update set
         tokens = ${available} - least(floor(${available}), excluded.granted),
         granted = least(floor(${available}), excluded.granted),
         rate = excluded.rate,
         capacity = excluded.capacity,
         updated_at = clock_timestamp()
       returning b.bucket, b.tokens, b.granted`,
      [
        batch.map((r) => r.limit.bucket),
        batch.map((r) => r.limit.rate),
        batch.map((r) => r.limit.capacity),
        // A burst of concurrent requests leases for all of them at once: a slice each would serve one
        // round of waiters per statement and refuse the rest while the bucket still holds tokens.
        batch.map((r) => Math.max(leaseSize(r.limit), r.state.waiting)),
      ],
    );
    return new Map(rows.map((r) => [r.bucket, { granted: r.granted, left: r.tokens }]));
  }

  async function drain(): Promise<void> {
    if (leasing) return;
    leasing = true;
    try {
      while (asked.size > 0) {
        const batch = [...asked.values()];
        asked = new Map();
        try {
          const results = await leaseBatch(batch);
          for (const r of batch) {
            const result = results.get(r.limit.bucket);
            for (const d of r.done)
              if (result) d.resolve(result);
              else d.reject(new Error(`no lease row for ${r.limit.bucket}`));
          }
        } catch (error) {
          for (const r of batch) for (const d of r.done) d.reject(error);
        }
      }
    } finally {
      leasing = false;
    }
  }

  async function lease(limit: Limit, state: Local): Promise<void> {
    const result = await new Promise<{ granted: number; left: number }>((resolve, reject) => {
      const request = asked.get(limit.bucket);
      if (request) request.done.push({ resolve, reject });
      else asked.set(limit.bucket, { limit, state, done: [{ resolve, reject }] });
      void drain();
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
        if (state.tokens < leaseSize(limit) / 2 || state.expiresAt - now() < leaseTtlMs / 5) {
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
