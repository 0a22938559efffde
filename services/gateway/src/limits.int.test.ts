import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@mds/config';
import {
  admin,
  clientRequestTopic,
  collect,
  companyWithKey,
  context,
  FINGERPRINT_KEY,
  INTERNAL_TOKEN,
  eventually,
  post,
  startStack,
  type TestStack,
} from '../test/support.js';
import { startGateway } from './app.js';
import { configSchema } from './config.js';
import { openDatabase } from '@mds/db';

let stack: TestStack;

beforeAll(async () => {
  // Other calls: 2 per second per key (bursts of 2), 3 per second per company (bursts of 3).
  stack = await startStack({
    RATE_LIMIT_OTHER_PER_KEY: '2',
    RATE_LIMIT_OTHER_PER_COMPANY: '3',
    RATE_LIMIT_BURST_SECONDS: '1',
  });
});
afterAll(() => stack?.stop());

const check = (key: string, phone = '79123456789') =>
  post(stack, '/client/check', { phone_number: phone }, { 'x-api-key': key });

describe('rate limits', () => {
  it('answer 429 with Retry-After and RateLimit headers once an API key spends its burst', async () => {
    const { apiKey } = await companyWithKey(stack, 'Limited');
    // All at once: a slow machine taking its time between requests would let the bucket refill. The
    // limiter never admits more than the bucket holds.
    const responses = await Promise.all(Array.from({ length: 4 }, () => check(apiKey)));
    const statuses = responses.map((r) => r.status);
    const refused = responses.find((r) => r.status === 429);
    expect(statuses.filter((s) => s === 202).length).toBeGreaterThanOrEqual(1);
    expect(statuses.filter((s) => s === 202).length).toBeLessThanOrEqual(2);
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refused!.headers.get('ratelimit-policy')).toMatch(/"other-key";q=2;w=1/);
    expect(refused!.headers.get('ratelimit')).toMatch(/r=0/);
    expect(await refused!.json()).toMatchObject({
      status: 429,
      code: 'rate_limited',
      violated_policy: 'other-key',
    });
  });

  it('admit a burst within the bucket whole, even when it arrives all at once', async () => {
    const db = await openDatabase({ url: stack.databaseUrl, schema: 'gateway' });
    try {
      const { createRateLimiter } = await import('./adapters/rate-limiter.js');
      const limiter = createRateLimiter({ db });
      // 10 tokens that refill one per 10 s: what the test admits is the bucket, however slow the machine.
      const limit = { bucket: `key:${randomUUID()}:send`, rate: 0.1, capacity: 10 };
      const verdicts = await Promise.all(Array.from({ length: 25 }, () => limiter.check([limit])));
      expect(verdicts.filter((v) => v.allowed)).toHaveLength(10);
      for (const verdict of verdicts.filter((v) => !v.allowed)) {
        expect(verdict).toEqual({ allowed: false, retryAfterSeconds: expect.any(Number), limit });
        // The bucket is empty: the next token is about 10 s away.
        expect((verdict as { retryAfterSeconds: number }).retryAfterSeconds).toBeGreaterThanOrEqual(9);
      }
    } finally {
      await db.destroy();
    }
  });

  it('recover after the Retry-After', async () => {
    const { apiKey } = await companyWithKey(stack, 'Patient');
    while ((await check(apiKey)).status === 202);
    await new Promise((r) => setTimeout(r, 1_100));
    expect((await check(apiKey)).status).toBe(202);
  });

  it('also apply per company, across its keys', async () => {
    const { companyId, apiKey } = await companyWithKey(stack, 'TwoKeys');
    const second = await admin<{ api_key: string }>(stack, 'POST', `/companies/${companyId}/api-keys`, {
      label: 'second',
    });
    const statuses = (
      await Promise.all([apiKey, second.api_key, apiKey, second.api_key].map((key) => check(key)))
    ).map((r) => r.status);
    // Each key alone would admit both of its calls; the company's 3 cannot admit all four.
    expect(statuses.filter((s) => s === 202).length).toBeLessThanOrEqual(3);
    expect(statuses).toContain(202);
  });

  it("one company spending its limit does not touch another's", async () => {
    const a = await companyWithKey(stack, 'Noisy');
    const b = await companyWithKey(stack, 'Quiet');
    while ((await check(a.apiKey)).status === 202);
    expect((await check(b.apiKey)).status).toBe(202);
  });

  it('hold across gateway replicas: a second gateway on the same database shares the buckets', async () => {
    const ctx = context();
    const second = await startGateway(
      loadConfig(configSchema, {
        KAFKA_BROKERS: process.env.KAFKA_BROKERS!,
        DATABASE_URL: stack.databaseUrl,
        KAFKA_TOPIC_PREFIX: stack.topicPrefix,
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: '0',
        OPS_PORT: '0',
        LOG_LEVEL: 'silent',
        REGISTRY_GRPC_ADDRESS: stack.registryGrpc,
        INTERNAL_GRPC_TOKEN: INTERNAL_TOKEN,
        IDEMPOTENCY_FINGERPRINT_KEYS: FINGERPRINT_KEY,
        RATE_LIMIT_OTHER_PER_KEY: '2',
        RATE_LIMIT_OTHER_PER_COMPANY: '3',
        RATE_LIMIT_BURST_SECONDS: '1',
      }),
      ctx,
    );
    try {
      const { apiKey } = await companyWithKey(stack, 'Spread');
      const urls = [stack.gatewayUrl, `http://127.0.0.1:${second.port}`];
      const statuses = (
        await Promise.all(
          Array.from({ length: 4 }, (_, i) =>
            post(
              { gatewayUrl: urls[i % 2]! },
              '/client/check',
              { phone_number: '79123456789' },
              { 'x-api-key': apiKey },
            ),
          ),
        )
      ).map((r) => r.status);
      // Never more than the key's 2 across both replicas (concurrent calls may be admitted less).
      expect(statuses.filter((s) => s === 202).length).toBeLessThanOrEqual(2);
      expect(statuses).toContain(202);
    } finally {
      await ctx.lifecycle.stop();
    }
  });
});

describe('Idempotency-Key', () => {
  it('the same key and body return the first response and record one event', async () => {
    const { apiKey } = await companyWithKey(stack, 'Retrier');
    const requests = await collect(stack, clientRequestTopic);
    try {
      const key = randomUUID();
      const a = await post(
        stack,
        '/change_phone',
        { old_phone: '79123456789', new_phone: '79876543210' },
        { 'x-api-key': apiKey, 'idempotency-key': key },
      );
      await new Promise((r) => setTimeout(r, 1_100));
      const b = await post(
        stack,
        '/change_phone',
        { old_phone: '+7 912 345 67 89', new_phone: '79876543210' },
        { 'x-api-key': apiKey, 'idempotency-key': key },
      );
      expect([a.status, b.status]).toEqual([202, 202]);
      const [bodyA, bodyB] = [await a.json(), await b.json()];
      expect(bodyB).toEqual(bodyA);
      expect(b.headers.get('idempotent-replayed')).toBe('true');
      const id = (bodyA as { event_id: string }).event_id;
      await eventually(
        'the event',
        () => requests.events.some((e) => e.metadata.streamId === id) || undefined,
      );
      await new Promise((r) => setTimeout(r, 500));
      // The registry answers on the same stream (PhoneChangeRejected); the request itself is there once.
      expect(
        requests.events.filter(
          (e) => e.metadata.streamId === id && e.metadata.type === 'PhoneChangeRequested',
        ),
      ).toHaveLength(1);
    } finally {
      await requests.stop();
    }
  });

  it('the same key with another body is 422 idempotency_key_reused', async () => {
    const { apiKey } = await companyWithKey(stack, 'Forgetful');
    const key = randomUUID();
    expect(
      (
        await post(
          stack,
          '/client/check',
          { phone_number: '79123456789' },
          { 'x-api-key': apiKey, 'idempotency-key': key },
        )
      ).status,
    ).toBe(202);
    await new Promise((r) => setTimeout(r, 1_100));
    const other = await post(
      stack,
      '/client/check',
      { phone_number: '79876543210' },
      { 'x-api-key': apiKey, 'idempotency-key': key },
    );
    expect(other.status).toBe(422);
    expect(await other.json()).toMatchObject({ code: 'idempotency_key_reused' });
  });

  it('a duplicate while the first is still in progress is 409', async () => {
    const { apiKey, keyId } = await companyWithKey(stack, 'Impatient');
    const key = randomUUID();
    // Another replica holds the claim (as while its publish is in flight).
    const db = await openDatabase({ url: stack.databaseUrl, schema: 'gateway' });
    try {
      const { createIdempotencyStore } = await import('./adapters/idempotency.js');
      const { fingerprinter } = await import('./application/fingerprint.js');
      const fingerprint = fingerprinter([FINGERPRINT_KEY])('POST /client/check', {
        phone_number: '79123456789',
      });
      expect(
        await createIdempotencyStore({ db, ttlHours: 24 }).claim(keyId, key, fingerprint, randomUUID()),
      ).toMatchObject({ kind: 'new' });
    } finally {
      await db.destroy();
    }
    const response = await post(
      stack,
      '/client/check',
      { phone_number: '79123456789' },
      { 'x-api-key': apiKey, 'idempotency-key': key },
    );
    expect(response.status).toBe(409);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(await response.json()).toMatchObject({ code: 'idempotency_request_in_progress' });
  });

  it('an Idempotency-Key that is not 1-255 visible characters is 400', async () => {
    const { apiKey } = await companyWithKey(stack, 'Sloppy');
    const response = await post(
      stack,
      '/client/check',
      { phone_number: '79123456789' },
      { 'x-api-key': apiKey, 'idempotency-key': 'x'.repeat(256) },
    );
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'invalid_idempotency_key' });
  });
});
