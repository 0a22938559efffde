import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Knex } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { migrations } from './adapters/db/migrations.js';
import { createIdempotencyStore } from './adapters/idempotency.js';

let db: Knex;
let testSchema: TestSchema | undefined;

beforeAll(async () => {
  testSchema = await migratedTestSchema('gateway_idem', migrations);
  db = testSchema.db;
});

afterAll(() => testSchema?.drop());

it('a publish that certainly wrote nothing frees the key: the retry is a new request', async () => {
  const store = createIdempotencyStore({ db, ttlHours: 24 });
  const key = randomUUID();
  const first = await store.claim('key-1', key, 'fingerprint', randomUUID());
  expect(first).toMatchObject({ kind: 'new', takenOver: false });
  await store.release('key-1', key, 'no', { takenOver: false });
  const retry = randomUUID();
  expect(await store.claim('key-1', key, 'fingerprint', retry)).toEqual({
    kind: 'new',
    eventId: retry,
    takenOver: false,
  });
});

it('a claim taken over from a dead holder keeps its event id even when its own publish wrote nothing', async () => {
  const store = createIdempotencyStore({ db, ttlHours: 24 });
  const key = randomUUID();
  const original = randomUUID();
  await store.claim('key-1', key, 'fingerprint', original);
  // Its gateway published the event and died before answering: the claim's lock lapses.
  await db('idempotency_keys')
    .where({ api_key_id: 'key-1', idempotency_key: key })
    .update({ locked_until: db.raw(`now() - interval '1 second'`) });
  const takeover = await store.claim('key-1', key, 'fingerprint', randomUUID());
  expect(takeover).toEqual({ kind: 'new', eventId: original, takenOver: true });
  // The new holder's publish times out before leaving the process ("written: no"): the first one may
  // still be in Kafka, so the next retry must publish the same event id, not a new message.
  await store.release('key-1', key, 'no', { takenOver: true });
  expect(await store.claim('key-1', key, 'fingerprint', randomUUID())).toEqual({
    kind: 'new',
    eventId: original,
    takenOver: true,
  });
});
