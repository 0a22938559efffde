import { createHash, timingSafeEqual } from 'node:crypto';
import { apiKeyIdOf } from '@mds/contracts';
import type { ClientTlsFiles } from '@mds/grpc';
import { createRegistryCache } from './cache.js';
import { RegistryError } from './errors.js';
import { createRegistryClient, type Caller, type Resolution } from './client.js';

/**
 * What memory alone says of a key, before any lookup:
 * - `good`: known good and fresh (its caller);
 * - `refused`: malformed, refused by the registry a moment ago, or another secret under the id of a key this
 *   gateway knows (a key id has one secret for ever, so that is a forgery): no lookup can make it good;
 * - `known`: a company's key id (listed by the registry, or seen good here) whose secret nothing refuted: the
 *   registry is asked, and the request is none of the client address's guessing;
 * - `unknown`: anything else; asking about it is what the address's limit on guessing gates.
 */
export type KeyStanding =
  | { standing: 'good'; caller: Caller }
  | { standing: 'refused' }
  | { standing: 'known' }
  | { standing: 'unknown' };

export interface ApiKeyResolver {
  /** What memory says of a key (no lookup); a good key due for refresh-ahead starts one in the background. */
  standing(apiKey: string): KeyStanding;
  /** Throws a RegistryError when the registry cannot be asked (kind `busy`: too many lookups in flight). */
  resolve(apiKey: string): Promise<Resolution>;
  /** Replaces the directory of key ids with the registry's listing (throws when it cannot be had). */
  loadDirectory(): Promise<number>;
  /**
   * The key with this id ends at `at` (epoch ms; now or earlier: at once), as the account log says (revoked,
   * or a rolled key's overlap): from then on it is refused from memory, whatever was cached or is being
   * looked up, without asking the registry.
   */
  keyEnds(keyId: string, at: number): void;
  /**
   * Every good answer kept is asked about again at its next use (the key stays known, never charged): after a
   * time in which ends may have gone untold (the log follower between partitions).
   */
  lapseAll(): void;
  /** Lookups waiting for the registry now, refreshes aside (for metrics). */
  readonly inFlight: number;
  /** Key ids known to be companies' (listed or seen good). */
  readonly knownIds: number;
  close(): void;
}

export interface ApiKeyResolverOptions {
  /** Asks the registry about a well-formed key; the gRPC client in production. */
  ask: (apiKey: string) => Promise<Resolution>;
  /** Every unrevoked key id; the gRPC client in production. Without it only keys seen good here are known. */
  listKeyIds?: () => Promise<string[]>;
  ttlMs: number;
  negativeTtlMs: number;
  /**
   * Where in its TTL a good key, when used, is asked about again in the background: a fraction drawn per
   * answer between these bounds (spread, so keys cached together are not refreshed together). Default 0.5-0.8.
   */
  refreshAhead?: { from: number; to: number };
  /** Known keys remembered (by key id, with the SHA-256 of the key; fresh or lapsed). */
  maxEntries?: number;
  /** Refused keys remembered (by key id), in a cache of their own: a flood of bad keys never evicts a good one. */
  maxNegativeEntries?: number;
  /** Ends of keys told by keyEnds remembered (by key id; a key that ended never comes back). */
  maxEndedEntries?: number;
  /**
   * Registry lookups in flight at once; beyond them a known key's waits for a slot, and any other is refused with
   * a `busy` RegistryError (the caller answers 503).
   */
  maxConcurrentLookups?: number;
  /** Refresh-ahead lookups in flight at once (apart from the others); more wait for a later use of the key. */
  maxConcurrentRefreshes?: number;
  now?: () => number;
  random?: () => number;
  close?: () => void;
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

interface KnownKey {
  hash: Buffer;
  caller: Caller;
  /** Until when the registry's answer is trusted (a revoked key stops working by then at the latest). */
  goodUntil: number;
  /** When the key ends (its caller's expiresAt, or an end told since): refused from then on. */
  endsAt: number;
  /** From when a use of the key asks the registry again in the background. */
  refreshAt: number;
}

/**
 * API key -> company and scopes, asking client-registry as little as possible (keys themselves are never kept):
 * - a malformed key (not `mds_<id>_<secret>`, see @mds/contracts) is refused locally, asking no one;
 * - a good key is remembered by its id with its SHA-256, trusted for `ttlMs` from the registry's answer (a
 *   revoked key stops working within that), and asked about again in the background when it is used after
 *   `refreshAhead` of its TTL: a key in use never lapses, and a revocation is noticed at the next refresh;
 * - a lapsed key stays known (id and hash) while it fits in `maxEntries`: another secret under its id is refused
 *   locally, the real one is asked about as a known key;
 * - a key whose end the account log tells (`keyEnds`: revoked, or a rolled key's overlap over) is refused from
 *   memory from that moment, however long its good answer had left, and an answer in flight cannot revive it;
 *   a caller the registry gives an `expiresAt` is refused from then on without asking;
 * - a refused key is remembered for `negativeTtlMs` under its key id, with the SHA-256 of the key refused, in a
 *   separate bounded cache: the same bad key again is refused from memory; another secret under that id is then
 *   `unknown` (gated like a guess) until the real key is seen;
 * - at most `maxConcurrentLookups` lookups wait for the registry at once; beyond that a company's key (`known`)
 *   waits for the next free slot, ahead of any other, and a guess gets a `busy` RegistryError at once (no queue:
 *   under a flood a queue of guesses only adds latency and memory; the 503 says when to retry).
 * Concurrent lookups of one key share a call.
 */
export function createApiKeyResolver(o: ApiKeyResolverOptions): ApiKeyResolver {
  const now = o.now ?? Date.now;
  const random = o.random ?? Math.random;
  const ahead = o.refreshAhead ?? { from: 0.5, to: 0.8 };
  const maxEntries = o.maxEntries ?? 10_000;
  const maxRefreshes = o.maxConcurrentRefreshes ?? 8;
  const known = new Map<string, KnownKey>();
  let directory = new Set<string>();
  const refreshing = new Set<string>();
  const lookups = boundedLookups(o.ask, o.maxConcurrentLookups ?? 32);
  /** Key id -> when it ends (epoch ms), as told by keyEnds; the oldest told goes first past the bound. */
  const ended = new Map<string, { at: number; reason: 'revoked' | 'expired' }>();
  const maxEnded = o.maxEndedEntries ?? 100_000;
  const endOf = (keyId: string) => ended.get(keyId)?.at ?? Number.POSITIVE_INFINITY;
  const refused = createRegistryCache<{ keyHash: Buffer; reason: 'unknown' | 'revoked' | 'expired' }>({
    ttlMs: o.negativeTtlMs,
    maxEntries: o.maxNegativeEntries ?? 10_000,
    now,
  });
  const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

  /**
   * Keeps what the registry answered about a key: good (fresh, with its next refresh), or refused. Answers the
   * resolution as it stands now: an answer "good" for a key whose end came meanwhile is a refusal.
   */
  function record(keyId: string, hash: Buffer, answer: Resolution): Resolution {
    const at = now();
    let resolution = answer;
    if (resolution.ok) {
      const endsAt = Math.min(resolution.caller.expiresAt ?? Number.POSITIVE_INFINITY, endOf(keyId));
      if (at >= endsAt) resolution = { ok: false, reason: ended.get(keyId)?.reason ?? 'expired' };
      else {
        known.delete(keyId);
        known.set(keyId, {
          hash,
          caller: resolution.caller,
          goodUntil: at + o.ttlMs,
          endsAt,
          refreshAt: at + o.ttlMs * (ahead.from + (ahead.to - ahead.from) * random()),
        });
        while (known.size > maxEntries) known.delete(known.keys().next().value!);
        return resolution;
      }
    }
    if (resolution.reason === 'malformed') return resolution;
    refused.write(keyId, { keyHash: hash, reason: resolution.reason });
    const entry = known.get(keyId);
    if (entry && same(entry.hash, hash)) known.delete(keyId);
    if (resolution.reason !== 'unknown') directory.delete(keyId);
    return resolution;
  }

  function keyEnds(keyId: string, at: number): void {
    const before = ended.get(keyId);
    ended.delete(keyId);
    ended.set(
      keyId,
      before && before.at <= at ? before : { at, reason: at <= now() ? 'revoked' : 'expired' },
    );
    while (ended.size > maxEnded) ended.delete(ended.keys().next().value!);
    const entry = known.get(keyId);
    if (entry) entry.endsAt = Math.min(entry.endsAt, at);
    if (at <= now()) {
      known.delete(keyId);
      directory.delete(keyId);
    }
  }

  /** Asks again about a good key in use, off the request path; a failure leaves it for a later use. */
  function refreshAhead(apiKey: string, keyId: string, entry: KnownKey): void {
    if (refreshing.has(keyId) || refreshing.size >= maxRefreshes) return;
    refreshing.add(keyId);
    // Not again before this one is answered, nor in a tight loop while the registry is down.
    entry.refreshAt = Math.min(entry.goodUntil, now() + Math.max(1_000, o.ttlMs / 10));
    o.ask(apiKey)
      .then(
        (resolution) => void record(keyId, entry.hash, resolution),
        () => undefined,
      )
      .finally(() => refreshing.delete(keyId));
  }

  function standing(apiKey: string): KeyStanding {
    const keyId = apiKeyIdOf(apiKey);
    if (!keyId) return { standing: 'refused' };
    const t = now();
    if (t >= endOf(keyId)) return { standing: 'refused' };
    const hash = sha256(apiKey);
    const entry = known.get(keyId);
    if (entry) {
      if (!same(entry.hash, hash)) return { standing: 'refused' };
      if (t >= entry.endsAt) {
        // A rolled key's overlap is over: refused as the registry would, without asking it.
        known.delete(keyId);
        directory.delete(keyId);
        refused.write(keyId, { keyHash: hash, reason: 'expired' });
        return { standing: 'refused' };
      }
      if (t >= entry.goodUntil) return { standing: 'known' };
      if (t >= entry.refreshAt) refreshAhead(apiKey, keyId, entry);
      return { standing: 'good', caller: entry.caller };
    }
    const no = refused.read(keyId);
    if (no) return same(no.keyHash, hash) ? { standing: 'refused' } : { standing: 'unknown' };
    return directory.has(keyId) ? { standing: 'known' } : { standing: 'unknown' };
  }

  return {
    standing,
    keyEnds,
    lapseAll() {
      const t = now();
      for (const entry of known.values()) entry.goodUntil = Math.min(entry.goodUntil, t);
    },
    get inFlight() {
      return lookups.inFlight;
    },
    get knownIds() {
      let extra = 0;
      for (const id of known.keys()) if (!directory.has(id)) extra++;
      return directory.size + extra;
    },
    async loadDirectory() {
      if (!o.listKeyIds) return 0;
      directory = new Set(await o.listKeyIds());
      return directory.size;
    },
    async resolve(apiKey) {
      const keyId = apiKeyIdOf(apiKey);
      if (!keyId) return { ok: false, reason: 'malformed' };
      const memory = standing(apiKey);
      if (memory.standing === 'good') return { ok: true, caller: memory.caller };
      const end = ended.get(keyId);
      if (end && now() >= end.at) return { ok: false, reason: end.reason };
      const hash = sha256(apiKey);
      const no = refused.read(keyId);
      if (no && same(no.keyHash, hash)) return { ok: false, reason: no.reason };
      const entry = known.get(keyId);
      if (entry && !same(entry.hash, hash)) return { ok: false, reason: 'unknown' };

      // A company's key waits for a free slot (ahead of any guess); a guess finding none is refused at once.
      const resolution = await lookups.ask(apiKey, hash.toString('base64url'), memory.standing === 'known');
      return record(keyId, hash, resolution);
    },
    close: () => o.close?.(),
  };
}

/**
 * Lookups of keys, one per key at a time (concurrent asks of one key share it), at most `max` at once. When all
 * are taken, a lookup that may wait (a company's key) queues for the next free one, ahead of everything else;
 * one that may not (a guess) is refused at once with a `busy` RegistryError.
 */
function boundedLookups(ask: (apiKey: string) => Promise<Resolution>, max: number) {
  const flights = new Map<string, Promise<Resolution>>();
  const waiting: (() => void)[] = [];
  let active = 0;
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else active--;
  };
  async function run(apiKey: string, mayWait: boolean): Promise<Resolution> {
    if (active < max) active++;
    else if (mayWait) await new Promise<void>((resolve) => waiting.push(resolve));
    else throw new RegistryError('too many registry lookups in flight', { kind: 'busy' });
    try {
      return await ask(apiKey);
    } finally {
      release();
    }
  }
  return {
    ask(apiKey: string, flightKey: string, mayWait: boolean): Promise<Resolution> {
      const pending = flights.get(flightKey);
      if (pending) return pending;
      const flight = run(apiKey, mayWait);
      flights.set(flightKey, flight);
      const done = () => void flights.delete(flightKey);
      flight.then(done, done);
      return flight;
    },
    get inFlight() {
      return flights.size;
    },
  };
}

/** The registry's ResolveApiKey and ListApiKeyIds over gRPC (see RegistryClient). */
export function registryKeyLookup(o: {
  address: string;
  token: string;
  /** TLS to client-registry; unset: plaintext. */
  tls?: ClientTlsFiles | undefined;
}): {
  ask: (apiKey: string) => Promise<Resolution>;
  listKeyIds: () => Promise<string[]>;
  close: () => void;
} {
  const client = createRegistryClient({ ...o, deadlineMs: 2_000 });
  return {
    ask: (apiKey) => client.resolveApiKey(apiKey),
    listKeyIds: () => client.listApiKeyIds(),
    close: () => client.close(),
  };
}
