import { describe, expect, it } from 'vitest';
import { createRegistryCache } from './cache.js';
import { RegistryError } from './errors.js';

describe('the registry cache', () => {
  it('shares one lookup between concurrent gets, keeps its answer (undefined too) for the ttl, and forgets failures', async () => {
    let clock = 0;
    let lookups = 0;
    let fail = false;
    const cache = createRegistryCache<string | undefined>({ ttlMs: 1_000, maxEntries: 10, now: () => clock });
    const lookup = (answer: string | undefined) => () => (
      lookups++,
      fail ? Promise.reject(new Error('down')) : Promise.resolve(answer)
    );
    expect(await Promise.all([cache.get('a', lookup('a!')), cache.get('a', lookup('a!'))])).toEqual([
      'a!',
      'a!',
    ]);
    expect(lookups).toBe(1);
    expect(await cache.get('none', lookup(undefined))).toBeUndefined();
    expect(await cache.get('none', lookup(undefined))).toBeUndefined();
    expect(lookups).toBe(2);
    clock = 999;
    expect(cache.read('a')).toBe('a!');
    clock = 1_001;
    expect(cache.read('a')).toBeUndefined();
    fail = true;
    await expect(cache.get('a', lookup('a!'))).rejects.toThrow('down');
    fail = false;
    expect(await cache.get('a', lookup('a!'))).toBe('a!');
    expect(lookups).toBe(4);
    cache.forget('a');
    await cache.get('a', lookup('a!'));
    expect(lookups).toBe(5);
  });

  it('does not keep an answer forgotten while it was being looked up', async () => {
    const cache = createRegistryCache<string>({ ttlMs: 1_000, maxEntries: 10 });
    let release!: (v: string) => void;
    const first = cache.get('bot', () => new Promise((resolve) => (release = resolve)));
    cache.forget('bot');
    const second = cache.get('bot', () => Promise.resolve('new token'));
    release('old token');
    expect(await first).toBe('old token');
    expect(await second).toBe('new token');
    expect(cache.read('bot')).toBe('new token');
  });

  it('keeps at most maxEntries, the oldest going first (the least recently read with touchOnRead)', () => {
    for (const touchOnRead of [false, true]) {
      const cache = createRegistryCache<number>({ ttlMs: 1_000, maxEntries: 2, touchOnRead });
      cache.write('a', 1);
      cache.write('b', 2);
      cache.read('a');
      cache.write('c', 3);
      expect(cache.size).toBe(2);
      expect([...cache.entries()].map(([k]) => k)).toEqual(touchOnRead ? ['a', 'c'] : ['b', 'c']);
    }
  });

  it('expires each value by its own ttl', () => {
    let clock = 0;
    const cache = createRegistryCache<string>({
      ttlMs: (v) => (v === 'erased' ? Number.POSITIVE_INFINITY : 10),
      maxEntries: 10,
      now: () => clock,
    });
    cache.write('k1', 'key');
    cache.write('k2', 'erased');
    clock = 1e12;
    expect(cache.read('k1')).toBeUndefined();
    expect(cache.read('k2')).toBe('erased');
  });

  it('refuses one lookup more than maxConcurrentLookups at once, with a retriable busy error', async () => {
    const cache = createRegistryCache<string>({ ttlMs: 1_000, maxEntries: 10, maxConcurrentLookups: 1 });
    let release!: () => void;
    const held = cache.load('a', () => new Promise<string>((resolve) => (release = () => resolve('a'))));
    expect(cache.inFlight).toBe(1);
    // The same key joins the lookup in flight; another key is refused.
    const joined = cache.load('a', () => Promise.resolve('never asked'));
    const refused = cache.load('b', () => Promise.resolve('b'));
    await expect(refused).rejects.toBeInstanceOf(RegistryError);
    await expect(refused).rejects.toMatchObject({ kind: 'busy', retriable: true });
    release();
    expect(await Promise.all([held, joined])).toEqual(['a', 'a']);
    expect(cache.inFlight).toBe(0);
    // load does not keep what it looked up.
    expect(cache.read('a')).toBeUndefined();
  });
});
