import { describe, expect, it } from 'vitest';
import { createPacer } from './pacing.js';

describe('the pacer of endpoints with a rate limit', () => {
  it('spaces requests to a limited endpoint 1/N s apart, and leaves the others alone', async () => {
    let t = 0;
    const pacer = createPacer(() => t);
    const started: string[] = [];
    const turns = [1, 2, 3].map((i) => pacer.turn('a/ep_default', 50).then(() => started.push(`a${i}`)));
    await pacer.turn('b/ep_default', undefined);
    await pacer.turn('a/ep_other', 50);
    started.push('others');
    await Promise.all(turns);
    // The first of a's goes at once, the second after 20 ms, the third after 40 ms (real timers).
    expect(started).toEqual(['a1', 'others', 'a2', 'a3']);
    t = 1_000;
    const before = performance.now();
    await pacer.turn('a/ep_default', 50);
    expect(performance.now() - before).toBeLessThan(1_000);
  });
});
