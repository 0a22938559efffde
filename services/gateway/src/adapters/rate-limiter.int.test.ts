import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { createTestDatabase } from '@mds/local-infra/testing';
import { migrations, SCHEMA } from './db/migrations.js';
import type { Limit } from '../application/ports.js';
import { createRateLimiter } from './rate-limiter.js';

let db: Knex;

beforeAll(async () => {
  db = await openDatabase({ url: await createTestDatabase('limiter'), schema: SCHEMA, poolMax: 4 });
  await migrateUp(db, SCHEMA, migrations);
});
afterAll(() => db?.destroy());

const limit = (bucket: string, rate: number, capacity = rate): Limit => ({ bucket, rate, capacity });

async function admitted(limiter: ReturnType<typeof createRateLimiter>, limits: Limit[], tries: number) {
  const verdicts = await Promise.all(Array.from({ length: tries }, () => limiter.check(limits)));
  return verdicts.filter((v) => v.allowed).length;
}

describe('rate limiter', () => {
  it('leases many buckets together, each its own slice: every bucket admits exactly what it holds', async () => {
    // A slow refill (one token in 1000 s) leases 1 token at a time. 200 buckets of 3 are asked at once,
    // each by 5 calls one after another: every bucket admits its 3 and no bucket takes from another.
    const limiter = createRateLimiter({ db });
    const buckets = Array.from({ length: 200 }, (_, i) => limit(`many:${i}`, 0.001, 3));
    const counts = await Promise.all(
      buckets.map(async (b) => {
        let allowed = 0;
        for (let i = 0; i < 5; i++) if ((await limiter.check([b])).allowed) allowed++;
        return allowed;
      }),
    );
    expect(counts).toEqual(buckets.map(() => 3));
    const stored = await db('rate_buckets')
      .whereLike('bucket', 'many:%')
      .select<{ tokens: number }[]>('tokens');
    expect(stored).toHaveLength(200);
    for (const row of stored) expect(row.tokens).toBeLessThan(1);
  });

  it('many calls at once on two replicas sharing a bucket admit no more than it holds', async () => {
    const a = createRateLimiter({ db });
    const b = createRateLimiter({ db });
    const shared = limit('shared:1', 0.001, 5);
    const [fromA, fromB] = await Promise.all([admitted(a, [shared], 20), admitted(b, [shared], 20)]);
    // Which replica gets the tokens is a race (a lease asks for every waiting request, so one replica may
    // take the whole bucket); together they never admit more than it holds, and what it holds is used.
    expect(fromA + fromB).toBeLessThanOrEqual(5);
    expect(fromA + fromB).toBeGreaterThanOrEqual(1);
  });

  it('refuses with a Retry-After once a bucket is spent, and the refusal names the bucket', async () => {
    const limiter = createRateLimiter({ db });
    const key = limit('key:x:send', 0.001, 1);
    expect(await limiter.check([key])).toMatchObject({ allowed: true });
    const refused = await limiter.check([key]);
    expect(refused).toMatchObject({ allowed: false, limit: key });
    expect(refused.allowed === false && refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
  });

  it('a bucket stored by an earlier version (no rate or size columns set) is leased from as before', async () => {
    await db('rate_buckets').insert({ bucket: 'old:1', tokens: 2, updated_at: db.fn.now() });
    const limiter = createRateLimiter({ db });
    // Capacity 2, rate 0.001/s: the 2 stored tokens and nothing more.
    expect(await admitted(limiter, [limit('old:1', 0.001, 2)], 5)).toBe(2);
  });
});
