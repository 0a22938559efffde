import { RegistryError } from './errors.js';

export interface RegistryCacheOptions<V> {
  /** How long a value is used without asking again: one figure, or one per value (Infinity: for good). */
  ttlMs: number | ((value: V) => number);
  /** Entries kept; the oldest goes first (least recently used, with `touchOnRead`). */
  maxEntries: number;
  /** A hit makes an entry the newest (an LRU); otherwise entries age from when they were written. */
  touchOnRead?: boolean;
  /**
   * Lookups waiting for the registry at once; one more (of a key not already being looked up) is refused
   * at once with a RegistryError of kind `busy` (no queue: under a flood a queue only adds latency and memory).
   */
  maxConcurrentLookups?: number;
  now?: () => number;
}

export interface RegistryCache<V> {
  /** A fresh value from memory only (no lookup): undefined when none is kept or it expired. */
  read(key: string): V | undefined;
  write(key: string, value: V): void;
  /** Drops a value, and a lookup of it in flight (its answer is not kept; the next get asks again). */
  forget(key: string): void;
  /** The kept value, else `lookup`'s answer, kept (a failed lookup is not). */
  get(key: string, lookup: () => Promise<V>): Promise<V>;
  /** `lookup`'s answer, not kept: concurrent loads of one key share one lookup. */
  load(key: string, lookup: () => Promise<V>): Promise<V>;
  /** Every entry, fresh or not; the cache may be changed while iterating. */
  entries(): IterableIterator<[string, V]>;
  readonly size: number;
  /** Lookups waiting for the registry now (for metrics). */
  readonly inFlight: number;
}

/**
 * The one cache in front of client-registry: a bounded map of values with an expiry each, and single-flight
 * lookups (concurrent misses of one key share a call), optionally bounded in number. A hit is a Map lookup
 * and a clock read (and, with `touchOnRead`, a delete and a set): cheap enough for the hot path.
 */
export function createRegistryCache<V>(o: RegistryCacheOptions<V>): RegistryCache<V> {
  const now = o.now ?? Date.now;
  const maxConcurrent = o.maxConcurrentLookups ?? Number.POSITIVE_INFINITY;
  const ttl = o.ttlMs;
  const ttlOf = typeof ttl === 'number' ? () => ttl : ttl;
  const values = new Map<string, { value: V; expiresAt: number }>();

  /** The fresh entry of a key (its value may itself be undefined: "the registry knows none"). */
  function fresh(key: string): { value: V } | undefined {
    const entry = values.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= now()) {
      values.delete(key);
      return undefined;
    }
    if (o.touchOnRead) {
      values.delete(key);
      values.set(key, entry);
    }
    return entry;
  }

  function write(key: string, value: V): void {
    values.delete(key);
    values.set(key, { value, expiresAt: now() + ttlOf(value) });
    while (values.size > o.maxEntries) values.delete(values.keys().next().value!);
  }

  type Flight = { promise: Promise<V>; keep: boolean };
  const flights = new Map<string, Flight>();

  /** One lookup per key at a time; its answer is kept if a get asked for it and it was not forgotten meanwhile. */
  function fly(key: string, lookup: () => Promise<V>, keep: boolean): Promise<V> {
    const pending = flights.get(key);
    if (pending) {
      pending.keep ||= keep;
      return pending.promise;
    }
    if (flights.size >= maxConcurrent)
      return Promise.reject(new RegistryError('too many registry lookups in flight', { kind: 'busy' }));
    const flight: Flight = { keep, promise: Promise.resolve(undefined as V) };
    const settled = () => flights.get(key) === flight && flights.delete(key);
    flight.promise = lookup().then(
      (value) => {
        if (settled() && flight.keep) write(key, value);
        return value;
      },
      (error: unknown) => {
        settled();
        throw error;
      },
    );
    flights.set(key, flight);
    return flight.promise;
  }

  return {
    read: (key) => fresh(key)?.value,
    write,
    forget(key) {
      values.delete(key);
      flights.delete(key);
    },
    get(key, lookup) {
      const hit = fresh(key);
      return hit ? Promise.resolve(hit.value) : fly(key, lookup, true);
    },
    load: (key, lookup) => fly(key, lookup, false),
    *entries() {
      for (const [key, entry] of values) yield [key, entry.value];
    },
    get size() {
      return values.size;
    },
    get inFlight() {
      return flights.size;
    },
  };
}
