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
    expect(resolver.cached(good)).toMatchObject({ companyId: 'c1' });
    expect(await resolver.resolve(good)).toMatchObject({ ok: true });
    expect(r.asked.filter((k) => k === good)).toHaveLength(1);
    // A refused key is asked about again once its short TTL is over; a good one once its own is.
    const again = keyWith(randomId());
    await resolver.resolve(again);
    now += 101;
    await resolver.resolve(again);
    expect(r.asked.filter((k) => k === again)).toHaveLength(2);
    now += 1_000;
    expect(resolver.cached(good)).toBeUndefined();
  });

  it("does not let wrong secrets under a real key's id lock that key out", async () => {
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
});
