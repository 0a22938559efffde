import { describe, expect, it } from 'vitest';
import { OffsetTracker } from './offsets.js';

describe('the commit position of a partition', () => {
  it('follows what was handled', () => {
    const t = new OffsetTracker();
    expect(t.toCommit()).toEqual([]);
    t.handled('a', 0, 5n);
    expect(t.toCommit()).toEqual([{ topic: 'a', partition: 0, offset: 5n }]);
  });

  it('stays at the first deferred record until it is released, whatever was released after it', () => {
    const t = new OffsetTracker();
    t.defer('a', 0, 2n);
    t.defer('a', 0, 3n);
    t.handled('a', 0, 5n);
    expect(t.toCommit()).toEqual([{ topic: 'a', partition: 0, offset: 2n }]);
    t.release('a', 0, 3n);
    expect(t.toCommit()).toEqual([{ topic: 'a', partition: 0, offset: 2n }]);
    t.release('a', 0, 2n);
    expect(t.toCommit()).toEqual([{ topic: 'a', partition: 0, offset: 5n }]);
    expect(t.totalDeferred()).toBe(0);
  });

  it('is offered again only once it moved past what was committed', () => {
    const t = new OffsetTracker();
    t.handled('a', 0, 5n);
    t.handled('a', 1, 7n);
    t.committed(t.toCommit());
    expect(t.toCommit()).toEqual([]);
    t.handled('a', 1, 9n);
    expect(t.toCommit()).toEqual([{ topic: 'a', partition: 1, offset: 9n }]);
  });

  it('never goes back when handled positions arrive out of order', () => {
    const t = new OffsetTracker();
    t.handled('a', 0, 9n);
    t.handled('a', 0, 4n);
    expect(t.toCommit()).toEqual([{ topic: 'a', partition: 0, offset: 9n }]);
    expect(t.deferredCount('a', 0)).toBe(0);
  });
});
