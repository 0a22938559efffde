import { describe, expect, it } from 'vitest';
import { PublishTimeoutError, type OutgoingEvent } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { memoryPersonKeys } from '@mds/personal-data';
import { acceptBatch, acceptRequest, type AcceptDeps } from './accept.js';
import { clientCheckRequested } from './events.js';
import { fingerprinter } from './fingerprint.js';
import type { Claim, Holder, IdempotencyStore } from './ports.js';

// The accept use case with its ports in memory: what it decides and what it leaves in the idempotency store.

const caller = { companyId: 'company-1', keyId: 'key-1' };

/** One Idempotency-Key's claim in memory, recording what the use case did with it. */
function memoryIdempotency(claim: Claim) {
  const done: string[] = [];
  const store: IdempotencyStore = {
    claim: () => Promise.resolve(claim),
    complete: (_k, _key, _h: Holder, status, response) => (
      done.push(`complete ${status} ${JSON.stringify(response)}`),
      Promise.resolve(true)
    ),
    release: (_k, _key, written) => (done.push(`release ${written}`), Promise.resolve()),
    claimMany: (_k, claims) => Promise.resolve(claims.map(() => claim)),
    completeMany: (_k, completions) => (
      completions.forEach((c) => done.push(`complete ${c.statusCode} ${JSON.stringify(c.response)}`)),
      Promise.resolve()
    ),
    removeExpired: () => Promise.resolve(0),
  };
  return { store, done };
}

function deps(o: { idempotency: IdempotencyStore; publish?: () => Promise<void>; keysDown?: boolean }) {
  const published: OutgoingEvent[] = [];
  const keys = memoryPersonKeys().port;
  const d: AcceptDeps = {
    logger: createLogger({ service: 'accept-test', level: 'silent' }),
    publisher: {
      publish: (events) => (published.push(...events), o.publish ? o.publish() : Promise.resolve()),
    },
    idempotency: o.idempotency,
    personKeys: o.keysDown
      ? { obtain: () => Promise.reject(new Error('registry down')), get: keys.get }
      : keys,
    publishTimeoutMs: 1_000,
    fingerprint: fingerprinter(['accept-test-fingerprint-key-0123456789']),
    now: () => new Date('2026-11-24T10:00:00Z'),
    newId: () => '00000000-0000-4000-8000-000000000001',
  };
  return { d, published };
}

const check = (idempotencyKey?: string) => ({
  operation: 'POST /client/check',
  caller,
  idempotencyKey,
  body: { phone_number: '+79001234567' },
  toEvent: clientCheckRequested,
  respond: (id: string) => ({ status: 'accepted', event_id: id }),
});

describe('accepting a request', () => {
  it('publishes the sealed event under the claimed event id and stores the 202 for the key', async () => {
    const { store, done } = memoryIdempotency({
      kind: 'new',
      eventId: 'claimed-id',
      token: 't',
      takenOver: false,
    });
    const { d, published } = deps({ idempotency: store });
    expect(await acceptRequest(d, check('key-a'))).toEqual({
      kind: 'accepted',
      body: { status: 'accepted', event_id: 'claimed-id' },
    });
    expect(published.map((e) => e.key)).toEqual(['claimed-id']);
    expect(JSON.stringify(published[0]!.record)).not.toContain('79001234567');
    expect(done).toEqual(['complete 202 {"status":"accepted","event_id":"claimed-id"}']);
  });

  it('answers a replay, a reused key and a key in flight without publishing', async () => {
    for (const [claim, outcome] of [
      [
        { kind: 'replay', statusCode: 202, response: { event_id: 'earlier' } },
        { kind: 'replayed', statusCode: 202, response: { event_id: 'earlier' } },
      ],
      [{ kind: 'mismatch' }, { kind: 'refused', reason: 'idempotency_key_reused' }],
      [{ kind: 'in_flight' }, { kind: 'refused', reason: 'idempotency_request_in_progress' }],
    ] as const) {
      const { store } = memoryIdempotency(claim);
      const { d, published } = deps({ idempotency: store });
      expect(await acceptRequest(d, check('key-b'))).toEqual(outcome);
      expect(published).toEqual([]);
    }
  });

  it('frees the key when the log took nothing, keeps its event id when the log may have taken it', async () => {
    for (const written of ['no', 'unknown'] as const) {
      const { store, done } = memoryIdempotency({
        kind: 'new',
        eventId: 'id-c',
        token: 't',
        takenOver: false,
      });
      const { d } = deps({
        idempotency: store,
        publish: () => Promise.reject(new PublishTimeoutError(written, 1_000)),
      });
      expect(await acceptRequest(d, check('key-c'))).toEqual({
        kind: 'refused',
        reason: 'broker_unavailable',
        written,
      });
      expect(done).toEqual([`release ${written}`]);
    }
    const { d } = deps({
      idempotency: memoryIdempotency({ kind: 'in_flight' }).store,
      publish: () => Promise.reject(new Error('broker gone')),
    });
    expect(await acceptRequest(d, check())).toEqual({
      kind: 'refused',
      reason: 'broker_unavailable',
      written: 'unknown',
    });
  });

  it('refuses, frees the key and publishes nothing when the person keys cannot be had', async () => {
    const { store, done } = memoryIdempotency({ kind: 'new', eventId: 'id-d', token: 't', takenOver: false });
    const { d, published } = deps({ idempotency: store, keysDown: true });
    expect(await acceptRequest(d, check('key-d'))).toEqual({
      kind: 'refused',
      reason: 'personal_data_keys_unavailable',
    });
    expect(published).toEqual([]);
    expect(done).toEqual(['release no']);
  });
});

describe('accepting a batch', () => {
  const items = (...keys: (string | undefined)[]) =>
    keys.map((idempotencyKey, n) => ({ idempotencyKey, body: { phone_number: `+7900123456${n}` } }));
  const batch = (...keys: (string | undefined)[]) => {
    const { idempotencyKey: _none, body: _one, ...command } = check();
    return { ...command, items: items(...keys) };
  };

  it('publishes the new messages in one call and stores each key answer, replaying a key answered before', async () => {
    const { store, done } = memoryIdempotency({
      kind: 'new',
      eventId: 'claimed',
      token: 't',
      takenOver: false,
    });
    const replayed = {
      ...store,
      claimMany: () =>
        Promise.resolve<Claim[]>([
          { kind: 'replay', statusCode: 202, response: { event_id: 'earlier' } },
          { kind: 'new', eventId: 'claimed', token: 't', takenOver: false },
        ]),
    };
    let calls = 0;
    const { d, published } = deps({ idempotency: replayed, publish: () => (calls++, Promise.resolve()) });
    expect(await acceptBatch(d, batch('old', 'new', undefined))).toEqual({
      kind: 'accepted',
      items: [
        { kind: 'accepted', requestId: 'earlier' },
        { kind: 'accepted', requestId: 'claimed' },
        { kind: 'accepted', requestId: '00000000-0000-4000-8000-000000000001' },
      ],
    });
    expect(calls).toBe(1);
    expect(published.map((e) => e.key)).toEqual(['claimed', '00000000-0000-4000-8000-000000000001']);
    expect(done).toEqual(['complete 202 {"status":"accepted","event_id":"claimed"}']);
  });

  it('refuses the whole batch when the log fails, each key keeping its event id (some may be in the log)', async () => {
    const { store, done } = memoryIdempotency({ kind: 'new', eventId: 'id', token: 't', takenOver: false });
    const { d } = deps({
      idempotency: store,
      publish: () => Promise.reject(new PublishTimeoutError('no', 1_000)),
    });
    expect(await acceptBatch(d, batch('a', 'b'))).toEqual({
      kind: 'refused',
      reason: 'broker_unavailable',
      written: 'unknown',
    });
    expect(done).toEqual(['release unknown', 'release unknown']);
  });
});
