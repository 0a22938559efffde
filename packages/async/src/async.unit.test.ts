import { describe, expect, it } from 'vitest';
import { backoffDelays, retryUntil, wakeableLoop, type WakeableLoop } from './index.js';

describe('a wakeable loop', () => {
  it('runs again at once when woken or when a pass says more waits, and sleeps otherwise', async () => {
    let passes = 0;
    let more = 2;
    const loop = wakeableLoop({
      pass: () => Promise.resolve(passes++ < 100 && more-- > 0),
      idleMs: 60_000,
      onError: () => undefined,
    });
    loop.start();
    await new Promise((r) => setTimeout(r, 20));
    expect(passes).toBe(3); // two with more waiting, then one that found nothing and sleeps
    loop.wake();
    await new Promise((r) => setTimeout(r, 20));
    expect(passes).toBe(4);
    await loop.stop();
  });

  it('keeps going after a pass that throws, and stops after the pass in progress', async () => {
    const errors: unknown[] = [];
    let passes = 0;
    const loop = wakeableLoop({
      pass: () => (passes++ === 0 ? Promise.reject(new Error('boom')) : Promise.resolve(false)),
      idleMs: 5,
      onError: (e) => errors.push(e),
    });
    loop.start();
    await new Promise((r) => setTimeout(r, 40));
    await loop.stop();
    const after = passes;
    await new Promise((r) => setTimeout(r, 20));
    expect(errors).toHaveLength(1);
    expect(passes).toBeGreaterThan(1);
    expect(passes).toBe(after);
  });
  it('sleeps after a pass it was woken during when told nothing can come of another pass now', async () => {
    let passes = 0;
    let mayRerun = false;
    const loop: WakeableLoop = wakeableLoop({
      pass: async () => {
        passes++;
        loop.wake(); // woken during every pass
        await new Promise((r) => setImmediate(r));
        return false;
      },
      idleMs: 60_000,
      onError: () => undefined,
      rerunWhenWoken: () => mayRerun,
    });
    loop.start();
    await new Promise((r) => setTimeout(r, 20));
    expect(passes).toBe(1); // woken, but held back: it sleeps
    mayRerun = true;
    loop.wake();
    await new Promise((r) => setTimeout(r, 20));
    expect(passes).toBeGreaterThan(10); // woken during each pass, and let rerun
    mayRerun = false;
    await loop.stop();
  });
});

describe('retry', () => {
  it('doubles its waits up to the cap', () => {
    const next = backoffDelays(100, 500);
    expect([next(), next(), next(), next()]).toEqual([100, 200, 400, 500]);
  });

  it('retries until the work succeeds, or throws when told to stop', async () => {
    let n = 0;
    expect(
      await retryUntil(() => (++n < 3 ? Promise.reject(new Error('no')) : Promise.resolve(n)), {
        initialMs: 1,
        maxMs: 2,
      }),
    ).toBe(3);
    await expect(
      retryUntil(() => Promise.reject(new Error('for good')), {
        initialMs: 1,
        maxMs: 2,
        shouldRetry: (_e, attempt) => attempt < 2,
      }),
    ).rejects.toThrow('for good');
  });
});
