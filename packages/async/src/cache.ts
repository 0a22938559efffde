export interface SingleFlightCache<V> {
  /** The cached value, or the one lookup in flight for the key, or a new lookup. */
  get(key: string): Promise<V>;
  forget(key: string): void;
}

/**
 * Values looked up by key and kept for `ttlMs` once found; concurrent gets of one key share one lookup; a
 * lookup that fails is not kept (the next get asks again). At most `capacity` keys, the oldest dropped.
 */
export function singleFlightCache<V>(o: {
  lookup: (key: string) => Promise<V>;
  ttlMs: number | ((value: V) => number);
  capacity?: number;
  now?: () => number;
}): SingleFlightCache<V> {
  const now = o.now ?? Date.now;
  const capacity = o.capacity ?? 10_000;
  const entries = new Map<string, { value: Promise<V>; expiresAt: number }>();
  return {
    get(key) {
      const hit = entries.get(key);
      if (hit && hit.expiresAt > now()) return hit.value;
      const value = o.lookup(key);
      const entry = { value, expiresAt: Number.POSITIVE_INFINITY };
      entries.delete(key);
      if (entries.size >= capacity) entries.delete(entries.keys().next().value!);
      entries.set(key, entry);
      value.then(
        (v) => {
          entry.expiresAt = now() + (typeof o.ttlMs === 'number' ? o.ttlMs : o.ttlMs(v));
        },
        () => {
          if (entries.get(key) === entry) entries.delete(key);
        },
      );
      return value;
    },
    forget: (key) => void entries.delete(key),
  };
}
