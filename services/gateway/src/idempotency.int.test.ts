import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Knex } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { migrations } from './adapters/db/migrations.js';
import { createIdempotencyStore } from './adapters/idempotency.js';
import { fingerprinter } from './application/fingerprint.js';

const fingerprintOf = fingerprinter(['idempotency-test-key-0123456789abcdef']);
const body = { phone_number: '79161234567', text: 'Your code is 4711', service: 'telegram' };
const fingerprint = fingerprintOf('POST /send', body);

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
  const first = await store.claim('key-1', key, fingerprint, randomUUID());
  expect(first).toMatchObject({ kind: 'new', takenOver: false });
  await store.release('key-1', key, 'no', holder(first));
  const retry = randomUUID();
  expect(await store.claim('key-1', key, fingerprint, retry)).toMatchObject({
    kind: 'new',
    eventId: retry,
    takenOver: false,
  });
});

it('a claim taken over from a dead holder keeps its event id even when its own publish wrote nothing', async () => {
  const store = createIdempotencyStore({ db, ttlHours: 24 });
  const key = randomUUID();
  const original = randomUUID();
  await store.claim('key-1', key, fingerprint, original);
  // Its gateway published the event and died before answering: the claim's lock lapses.
  await db('idempotency_keys')
    .where({ api_key_id: 'key-1', idempotency_key: key })
    .update({ locked_until: db.raw(`now() - interval '1 second'`) });
  const takeover = await store.claim('key-1', key, fingerprint, randomUUID());
  expect(takeover).toMatchObject({ kind: 'new', eventId: original, takenOver: true });
  // The new holder's publish times out before leaving the process ("written: no"): the first one may
  // still be in Kafka, so the next retry must publish the same event id, not a new message.
  await store.release('key-1', key, 'no', holder(takeover));
  expect(await store.claim('key-1', key, fingerprint, randomUUID())).toMatchObject({
    kind: 'new',
    eventId: original,
    takenOver: true,
  });
});

it('a holder whose claim lapsed and was taken over can neither free the key nor store its answer', async () => {
  const store = createIdempotencyStore({ db, ttlHours: 24 });
  const key = randomUUID();
  const original = randomUUID();
  const slow = await store.claim('key-1', key, fingerprint, original);
  await db('idempotency_keys')
    .where({ api_key_id: 'key-1', idempotency_key: key })
    .update({ locked_until: db.raw(`now() - interval '1 second'`) });
  const takeover = await store.claim('key-1', key, fingerprint, randomUUID());
  expect(takeover).toMatchObject({ kind: 'new', eventId: original, takenOver: true });
  // The slow holder's publish fails with nothing written: without tokens it would delete the row, and
  // the next retry would become a second message under a new event id.
  await store.release('key-1', key, 'no', holder(slow));
  expect(await store.complete('key-1', key, holder(slow), 202, { event_id: 'stale' })).toBe(false);
  expect(await store.claim('key-1', key, fingerprint, randomUUID())).toEqual({ kind: 'in_flight' });
  // The new holder finishes: its answer is the one replayed.
  expect(await store.complete('key-1', key, holder(takeover), 202, { event_id: original })).toBe(true);
  expect(await store.claim('key-1', key, fingerprint, randomUUID())).toEqual({
    kind: 'replay',
    statusCode: 202,
    response: { event_id: original },
  });
});

function holder(claim: Awaited<ReturnType<ReturnType<typeof createIdempotencyStore>['claim']>>) {
  if (claim.kind !== 'new') throw new Error(`expected a new claim, got ${claim.kind}`);
  return claim;
}

it('answers a retry whose claim the previous build stored with an unkeyed fingerprint, and still refuses another body', async () => {
  const store = createIdempotencyStore({ db, ttlHours: 24 });
  const key = randomUUID();
  const original = randomUUID();
  // What a gateway before keyed fingerprints stored for a request it answered a moment before the upgrade.
  await db('idempotency_keys').insert({
    api_key_id: 'key-1',
    idempotency_key: key,
    fingerprint: createHash('sha256')
      .update(`POST /send\n${JSON.stringify(body)}`)
      .digest('hex'),
    event_id: original,
    claim_token: randomUUID(),
    state: 'done',
    status_code: 202,
    response: JSON.stringify({ status: 'accepted', event_id: original }),
    locked_until: new Date(),
    created_at: new Date(),
  });
  expect(await store.claim('key-1', key, fingerprint, randomUUID())).toEqual({
    kind: 'replay',
    statusCode: 202,
    response: { status: 'accepted', event_id: original },
  });
  const other = fingerprintOf('POST /send', { ...body, text: 'Your code is 4712' });
  expect(await store.claim('key-1', key, other, randomUUID())).toEqual({ kind: 'mismatch' });
  // What it stores now is keyed: no bare hash of the number and the text.
  const fresh = randomUUID();
  await store.claim('key-1', fresh, fingerprint, randomUUID());
  const stored = await db('idempotency_keys')
    .where({ idempotency_key: fresh })
    .first<{ fingerprint: string }>('fingerprint');
  expect(stored.fingerprint).toMatch(/^h1:[0-9a-f]{64}$/);
});

it('claims many keys at once: new ones by one statement, held ones answered as a single claim would be', async () => {
  const store = createIdempotencyStore({ db, ttlHours: 24 });
  const [done, pending, lapsed, fresh] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
  const other = fingerprintOf('POST /send', { ...body, text: 'Your code is 4712' });
  const answered = holder(await store.claim('key-2', done, fingerprint, randomUUID()));
  await store.completeMany('key-2', [
    { key: done, holder: answered, statusCode: 202, response: { event_id: answered.eventId } },
  ]);
  await store.claim('key-2', pending, fingerprint, randomUUID());
  const dead = holder(await store.claim('key-2', lapsed, fingerprint, randomUUID()));
  await db('idempotency_keys')
    .where({ api_key_id: 'key-2', idempotency_key: lapsed })
    .update({ locked_until: db.raw(`now() - interval '1 second'`) });

  const ids = Array.from({ length: 7 }, () => randomUUID());
  const claims = await store.claimMany(
    'key-2',
    [
      [fresh, fingerprint],
      [done, fingerprint],
      [done, other],
      [pending, fingerprint],
      [lapsed, fingerprint],
      // The same new key twice in one call: the first claims it.
      [`${fresh}-twice`, fingerprint],
      [`${fresh}-twice`, fingerprint],
    ].map(([key, print], i) => ({
      key: key as string,
      fingerprint: print as typeof fingerprint,
      newEventId: ids[i]!,
    })),
  );
  expect(claims).toEqual([
    { kind: 'new', eventId: ids[0], token: expect.any(String), takenOver: false },
    { kind: 'replay', statusCode: 202, response: { event_id: answered.eventId } },
    { kind: 'mismatch' },
    { kind: 'in_flight' },
    { kind: 'new', eventId: dead.eventId, token: expect.any(String), takenOver: true },
    { kind: 'new', eventId: ids[5], token: expect.any(String), takenOver: false },
    { kind: 'in_flight' },
  ]);
  // Only the holders' completions count.
  await store.completeMany('key-2', [
    { key: fresh, holder: holder(claims[0]!), statusCode: 202, response: { event_id: ids[0] } },
    { key: lapsed, holder: dead, statusCode: 202, response: { event_id: 'stale' } },
  ]);
  const rows = await db('idempotency_keys')
    .where('api_key_id', 'key-2')
    .whereIn('idempotency_key', [fresh, lapsed])
    .select<{ idempotency_key: string; state: string }[]>('idempotency_key', 'state');
  expect(Object.fromEntries(rows.map((r) => [r.idempotency_key, r.state]))).toEqual({
    [fresh]: 'done',
    [lapsed]: 'pending',
  });
});
