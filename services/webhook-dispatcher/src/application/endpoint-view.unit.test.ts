import { describe, expect, it } from 'vitest';
import { createEndpointView } from './endpoint-view.js';
import type { Endpoint } from './ports.js';

const endpoint = (url: string): Endpoint => ({
  endpointId: 'ep_default',
  url,
  eventTypes: [],
  enabled: true,
  rateLimitPerSecond: undefined,
  secrets: [],
});

/** A registry in memory whose answers the test sets, counting reads; a read may be held until released. */
function harness() {
  let t = 0;
  const urls = new Map<string, string>();
  const reads: string[] = [];
  let hold: Promise<void> | undefined;
  const view = createEndpointView({
    load: async (companyId) => {
      reads.push(companyId);
      const url = urls.get(companyId);
      await hold;
      return url ? [endpoint(url)] : [];
    },
    disable: () => Promise.resolve(true),
    provisionalMs: 1_000,
    now: () => t,
  });
  return {
    view,
    urls,
    reads,
    advance: (ms: number) => (t += ms),
    holdReads: () => {
      let release!: () => void;
      hold = new Promise<void>((r) => (release = r));
      return () => {
        hold = undefined;
        release();
      };
    },
  };
}

const urlOf = async (p: Promise<Endpoint[]>) => (await p)[0]?.url;

describe('the endpoint view', () => {
  it('reads a company once while following, and again only after an account event of it', async () => {
    const { view, urls, reads, advance } = harness();
    view.following(true);
    advance(1_000);
    urls.set('a', 'https://a/1');
    expect(await urlOf(view.endpoints('a'))).toBe('https://a/1');
    urls.set('a', 'https://a/2');
    for (let i = 0; i < 100; i++) await view.endpoints('a');
    advance(3_600_000);
    expect(await urlOf(view.endpoints('a'))).toBe('https://a/1');
    expect(reads).toEqual(['a']);
    view.changed('b');
    expect(await urlOf(view.endpoints('a'))).toBe('https://a/1');
    view.changed('a');
    expect(await urlOf(view.endpoints('a'))).toBe('https://a/2');
    expect(reads).toEqual(['a', 'a']);
  });

  it('never keeps a read that started before a change of the company', async () => {
    const { view, urls, reads, advance, holdReads } = harness();
    view.following(true);
    advance(1_000);
    urls.set('a', 'https://a/old');
    const release = holdReads();
    const racing = view.endpoints('a');
    // The registry changes, and its event arrives, while the read is in flight (it answered the old state).
    view.changed('a');
    urls.set('a', 'https://a/new');
    release();
    expect(await urlOf(racing)).toBe('https://a/old');
    expect(await urlOf(view.endpoints('a'))).toBe('https://a/new');
    expect(reads).toEqual(['a', 'a']);
  });

  it('trusts a list read before the follower owns its partitions for a moment only', async () => {
    const { view, urls, reads, advance } = harness();
    urls.set('a', 'https://a/1');
    await view.endpoints('a');
    await view.endpoints('a');
    expect(reads).toHaveLength(1);
    view.following(true);
    // The follower's position may be after a change made meanwhile: the early read expires.
    urls.set('a', 'https://a/2');
    advance(1_001);
    expect(await urlOf(view.endpoints('a'))).toBe('https://a/2');
    // Read once the follower has settled: kept until changed.
    advance(3_600_000);
    expect(await urlOf(view.endpoints('a'))).toBe('https://a/2');
    expect(reads).toHaveLength(2);
  });

  it('forgets everything when the follower loses its partitions (changes meanwhile go unseen)', async () => {
    const { view, urls, reads, advance } = harness();
    view.following(true);
    advance(1_000);
    urls.set('a', 'https://a/1');
    await view.endpoints('a');
    view.following(false);
    urls.set('a', 'https://a/2');
    expect(await urlOf(view.endpoints('a'))).toBe('https://a/2');
    expect(reads).toHaveLength(2);
  });

  it('reads a company again after disabling one of its endpoints, and after clear()', async () => {
    const { view, reads, advance } = harness();
    view.following(true);
    advance(1_000);
    await view.endpoints('a');
    await view.disable({ companyId: 'a', endpointId: 'ep_default' }, 'gone');
    await view.endpoints('a');
    view.clear();
    await view.endpoints('a');
    expect(reads).toEqual(['a', 'a', 'a']);
  });

  it('shares one read between concurrent lookups of a company', async () => {
    const { view, reads, advance, holdReads } = harness();
    view.following(true);
    advance(1_000);
    const release = holdReads();
    const lookups = [view.endpoints('a'), view.endpoints('a'), view.endpoints('a')];
    release();
    await Promise.all(lookups);
    expect(reads).toEqual(['a']);
  });
});
