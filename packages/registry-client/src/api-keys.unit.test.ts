import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createApiKeyResolver } from './api-keys.js';
import type { Resolution } from './client.js';
import { RegistryError } from './errors.js';

const keyWith = (id: string) => `mds_${id}_${randomBytes(32).toString('base64url')}`;
const randomId = () => randomBytes(6).toString('hex');
const good = keyWith('aaaaaaaaaaaa');
const caller = { companyId: 'c1', keyId: 'aaaaaaaaaaaa', scopes: ['send'] as const };

/** A registry in memory that knows one key, counting what it is asked. */
function registry(o: { hold?: Promise<void> } = {}) {
  const asked: string[] = [];
  return {
    asked,
    ask: async (apiKey: string): Promise<Resolution> => {
      asked.push(apiKey);
      await o.hold;
      return apiKey === good
        ? { ok: true, caller: { ...caller, scopes: [...caller.scopes] } }
        : { ok: false, reason: 'unknown' };
    },
  };
}

describe('the API key resolver', () => {
  it('refuses a malformed key without asking the registry', async () => {
    const r = registry();
    const resolver = createApiKeyResolver({ ask: r.ask, ttlMs: 1_000, negativeTtlMs: 1_000 });
    for (const key of [
      '',
      'nope',
      `mds_${'A'.repeat(12)}_${'a'.repeat(43)}`,
      `${good}x`,
      good.slice(0, -1),
    ]) {
      expect(await resolver.resolve(key)).toEqual({ ok: false, reason: 'malformed' });
    }
    expect(r.asked).toEqual([]);
  });

  it('remembers a good key, and a refused one by key id, each in its own cache', async () => {
    let now = 0;
    const r = registry();
    const resolver = createApiKeyResolver({
      ask: r.ask,
      ttlMs: 1_000,
      negativeTtlMs: 100,
      maxEntries: 10,
      maxNegativeEntries: 5,
      now: () => now,
    });
    expect((await resolver.resolve(good)).ok).toBe(true);
    const bad = keyWith(randomId());
    expect(await resolver.resolve(bad)).toEqual({ ok: false, reason: 'unknown' });
    expect(await resolver.resolve(bad)).toEqual({ ok: false, reason: 'unknown' });
    expect(r.asked).toEqual([good, bad]);
    // Hundreds of refused keys fill the negative cache only: the good key is still answered from memory.
    for (let i = 0; i < 300; i++) await resolver.resolve(keyWith(randomId()));
    expect(resolver.standing(good)).toMatchObject({ standing: 'good', caller: { companyId: 'c1' } });
    expect(await resolver.resolve(good)).toMatchObject({ ok: true });
    expect(r.asked.filter((k) => k === good)).toHaveLength(1);
    // A refused key is asked about again once its short TTL is over; a good one once its own is.
    const again = keyWith(randomId());
    await resolver.resolve(again);
    now += 101;
    await resolver.resolve(again);
    expect(r.asked.filter((k) => k === again)).toHaveLength(2);
    now += 1_000;
    // Lapsed, but still known: asked about again, as a company's key rather than a guess.
    expect(resolver.standing(good)).toEqual({ standing: 'known' });
  });

  it("does not let wrong secrets under a real key's id lock that key out (before it is seen)", async () => {
    const r = registry();
    const resolver = createApiKeyResolver({ ask: r.ask, ttlMs: 0, negativeTtlMs: 60_000 });
    const forged = keyWith('aaaaaaaaaaaa');
    expect(await resolver.resolve(forged)).toEqual({ ok: false, reason: 'unknown' });
    expect(await resolver.resolve(forged)).toEqual({ ok: false, reason: 'unknown' });
    expect(await resolver.resolve(good)).toMatchObject({ ok: true });
    expect(r.asked).toEqual([forged, good]);
  });

  it('holds at most maxConcurrentLookups lookups in flight; one more is refused at once', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const r = registry({ hold });
    const resolver = createApiKeyResolver({
      ask: r.ask,
      ttlMs: 1_000,
      negativeTtlMs: 1_000,
      maxConcurrentLookups: 3,
    });
    const waiting = [1, 2, 3].map(() => resolver.resolve(keyWith(randomId())));
    expect(resolver.inFlight).toBe(3);
    const busy = resolver.resolve(keyWith(randomId()));
    await expect(busy).rejects.toBeInstanceOf(RegistryError);
    await expect(busy).rejects.toMatchObject({ kind: 'busy', retriable: true });
    // The same key asked twice shares one lookup (it does not take a second slot).
    expect(r.asked).toHaveLength(3);
    release();
    await Promise.all(waiting);
    expect(resolver.inFlight).toBe(0);
    expect((await resolver.resolve(good)).ok).toBe(true);
  });

  it('refuses another secret under the id of a key it knows, from memory', async () => {
    const r = registry();
    const resolver = createApiKeyResolver({ ask: r.ask, ttlMs: 1_000, negativeTtlMs: 1_000 });
    expect((await resolver.resolve(good)).ok).toBe(true);
    const forged = keyWith('aaaaaaaaaaaa');
    expect(resolver.standing(forged)).toEqual({ standing: 'refused' });
    expect(await resolver.resolve(forged)).toEqual({ ok: false, reason: 'unknown' });
    expect(r.asked).toEqual([good]);
  });

  it('knows the ids the registry lists: their keys are known, a guess is unknown', async () => {
    const r = registry();
    const listed = keyWith('bbbbbbbbbbbb');
    const resolver = createApiKeyResolver({
      ask: r.ask,
      listKeyIds: () => Promise.resolve(['aaaaaaaaaaaa', 'bbbbbbbbbbbb']),
      ttlMs: 1_000,
      negativeTtlMs: 1_000,
    });
    expect(resolver.standing(good)).toEqual({ standing: 'unknown' });
    expect(await resolver.loadDirectory()).toBe(2);
    expect(resolver.standing(good)).toEqual({ standing: 'known' });
    expect(resolver.standing(listed)).toEqual({ standing: 'known' });
    expect(resolver.standing(keyWith(randomId()))).toEqual({ standing: 'unknown' });
    // A wrong secret under a listed id is asked about once; the next other secret under it is gated as a guess.
    expect(await resolver.resolve(listed)).toEqual({ ok: false, reason: 'unknown' });
    expect(resolver.standing(listed)).toEqual({ standing: 'refused' });
    expect(resolver.standing(keyWith('bbbbbbbbbbbb'))).toEqual({ standing: 'unknown' });
    expect(resolver.knownIds).toBe(2);
  });

  it('refreshes a key in use ahead of its expiry, so it never lapses; one refresh at a time', async () => {
    let now = 0;
    const r = registry();
    const resolver = createApiKeyResolver({
      ask: r.ask,
      ttlMs: 1_000,
      negativeTtlMs: 100,
      refreshAhead: { from: 0.5, to: 0.5 },
      now: () => now,
    });
    expect((await resolver.resolve(good)).ok).toBe(true);
    now = 499;
    expect(resolver.standing(good).standing).toBe('good');
    expect(r.asked).toHaveLength(1);
    now = 500;
    // Due: answered from memory, and asked about once in the background however often it is used meanwhile.
    for (let i = 0; i < 5; i++) expect(resolver.standing(good).standing).toBe('good');
    expect(r.asked).toHaveLength(2);
    await new Promise((resolve) => setImmediate(resolve));
    // The answer counts from when it came: trusted until 1,500 now, refreshed from 1,000.
    now = 1_400;
    expect(resolver.standing(good).standing).toBe('good');
    expect(r.asked).toHaveLength(3);
  });

  it('drops a key its refresh finds revoked, and trusts an answer no longer than the TTL', async () => {
    let now = 0;
    let revoked = false;
    const asked: string[] = [];
    const resolver = createApiKeyResolver({
      ask: (apiKey) => {
        asked.push(apiKey);
        return Promise.resolve<Resolution>(
          revoked ? { ok: false, reason: 'revoked' } : { ok: true, caller: { ...caller, scopes: ['send'] } },
        );
      },
      ttlMs: 1_000,
      negativeTtlMs: 5_000,
      refreshAhead: { from: 0.6, to: 0.6 },
      now: () => now,
    });
    expect((await resolver.resolve(good)).ok).toBe(true);
    revoked = true;
    now = 600;
    expect(resolver.standing(good).standing).toBe('good');
    await new Promise((resolve) => setImmediate(resolve));
    expect(resolver.standing(good)).toEqual({ standing: 'refused' });
    expect(await resolver.resolve(good)).toEqual({ ok: false, reason: 'revoked' });
    expect(asked).toHaveLength(2);

    // Unused after its refresh point, a key is trusted until its TTL at most (as without refresh-ahead).
    revoked = false;
    now = 10_000;
    const other = keyWith('cccccccccccc');
    expect((await resolver.resolve(other)).ok).toBe(true);
    now = 11_000;
    expect(resolver.standing(other)).toEqual({ standing: 'known' });
  });

  it('spreads the refreshes of keys cached together, and bounds those in flight', async () => {
    let now = 0;
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const keys = Array.from({ length: 40 }, () => keyWith(randomId()));
    const asked: string[] = [];
    let draw = 0;
    const resolver = createApiKeyResolver({
      ask: async (apiKey) => {
        asked.push(apiKey);
        if (asked.length > keys.length) await hold;
        return { ok: true, caller: { ...caller, scopes: ['send'] } };
      },
      ttlMs: 1_000,
      negativeTtlMs: 100,
      maxConcurrentRefreshes: 4,
      // Each answer's refresh point drawn evenly between 50 % and 80 % of the TTL.
      random: () => (draw++ % 40) / 40,
      now: () => now,
    });
    for (const key of keys) expect((await resolver.resolve(key)).ok).toBe(true);
    now = 600;
    for (const key of keys) expect(resolver.standing(key).standing).toBe('good');
    // A third of them are due at 600 ms, but no more than 4 are asked about at once.
    expect(asked.length - keys.length).toBe(4);
    release();
  });

  it("queues a company's key when every lookup slot is taken, ahead of guesses", async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const r = registry({ hold });
    const resolver = createApiKeyResolver({
      ask: r.ask,
      listKeyIds: () => Promise.resolve(['aaaaaaaaaaaa']),
      ttlMs: 1_000,
      negativeTtlMs: 1_000,
      maxConcurrentLookups: 2,
    });
    await resolver.loadDirectory();
    const guesses = [1, 2].map(() => resolver.resolve(keyWith(randomId())));
    const company = resolver.resolve(good);
    await expect(resolver.resolve(keyWith(randomId()))).rejects.toMatchObject({ kind: 'busy' });
    expect(r.asked).toHaveLength(2);
    release();
    expect(await company).toMatchObject({ ok: true });
    await Promise.all(guesses);
    expect(r.asked).toHaveLength(3);
  });

  it('refuses a key at once, from memory, when the log says it ended, however long its answer had left', async () => {
    let now = 0;
    const r = registry();
    const resolver = createApiKeyResolver({
      ask: r.ask,
      ttlMs: 600_000,
      negativeTtlMs: 1_000,
      now: () => now,
    });
    expect((await resolver.resolve(good)).ok).toBe(true);
    now = 10;
    resolver.keyEnds(caller.keyId, now);
    expect(resolver.standing(good)).toEqual({ standing: 'refused' });
    expect(await resolver.resolve(good)).toEqual({ ok: false, reason: 'revoked' });
    // Long after the refusals cached for a moment have gone, the ended key is still refused without asking.
    now = 3_600_000;
    expect(resolver.standing(good)).toEqual({ standing: 'refused' });
    expect(await resolver.resolve(good)).toEqual({ ok: false, reason: 'revoked' });
    expect(r.asked).toEqual([good]);
  });

  it('does not let a lookup in flight revive a key whose end came meanwhile', async () => {
    let release!: () => void;
    const r = registry({ hold: new Promise<void>((resolve) => (release = resolve)) });
    const resolver = createApiKeyResolver({ ask: r.ask, ttlMs: 600_000, negativeTtlMs: 1_000 });
    const lookup = resolver.resolve(good);
    resolver.keyEnds(caller.keyId, Date.now());
    release();
    expect(await lookup).toEqual({ ok: false, reason: 'revoked' });
    expect(resolver.standing(good)).toEqual({ standing: 'refused' });
  });

  it('refuses a rolled key from the end of its overlap on, told by the log or by the registry, asking no one', async () => {
    let now = 0;
    const other = keyWith('cccccccccccc');
    const asked: string[] = [];
    const resolver = createApiKeyResolver({
      ask: (apiKey) => {
        asked.push(apiKey);
        return Promise.resolve<Resolution>(
          apiKey === good
            ? { ok: true, caller: { ...caller, scopes: ['send'] } }
            : { ok: true, caller: { ...caller, keyId: 'cccccccccccc', scopes: ['send'], expiresAt: 500 } },
        );
      },
      ttlMs: 600_000,
      negativeTtlMs: 1_000,
      now: () => now,
    });
    expect((await resolver.resolve(good)).ok).toBe(true);
    // Rolled with an overlap: still good until its end.
    resolver.keyEnds(caller.keyId, 1_000);
    now = 999;
    expect(resolver.standing(good).standing).toBe('good');
    now = 1_000;
    expect(resolver.standing(good)).toEqual({ standing: 'refused' });
    expect(await resolver.resolve(good)).toEqual({ ok: false, reason: 'expired' });

    // A key the registry answers with its end (rolled before this replica followed the log).
    now = 0;
    expect((await resolver.resolve(other)).ok).toBe(true);
    now = 499;
    expect(resolver.standing(other).standing).toBe('good');
    now = 500;
    expect(resolver.standing(other)).toEqual({ standing: 'refused' });
    expect(await resolver.resolve(other)).toEqual({ ok: false, reason: 'expired' });
    expect(asked).toEqual([good, other]);
  });

  it('keeps the earlier of two ends told of a key', () => {
    let now = 0;
    const resolver = createApiKeyResolver({
      ask: registry().ask,
      ttlMs: 1_000,
      negativeTtlMs: 1_000,
      now: () => now,
    });
    resolver.keyEnds(caller.keyId, 100);
    resolver.keyEnds(caller.keyId, 5_000);
    now = 100;
    expect(resolver.standing(good)).toEqual({ standing: 'refused' });
  });
});
