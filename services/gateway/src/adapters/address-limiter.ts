import { isIPv6 } from 'node:net';

export interface AddressLimiter {
  /** Takes a token of the address's bucket: refused (with when to retry) when it is empty. */
  take(address: string): { allowed: true } | { allowed: false; retryAfterSeconds: number };
  /** Gives back the token a request took (it authenticated after all). */
  refund(address: string): void;
  /** Addresses with a bucket now (bounded by `maxAddresses`). */
  readonly size: number;
}

/**
 * The bucket of an address: an IPv4 address is its own; an IPv6 one is its /64, since one host commonly holds a
 * whole /64 and could otherwise take a fresh bucket per request.
 */
export function addressBucket(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.split('::');
  const headGroups = head ? head.split(':') : [];
  const tailGroups = address.includes('::') ? (tail ? tail.split(':') : []) : [];
  const groups = address.includes('::')
    ? [...headGroups, ...Array<string>(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups]
    : headGroups;
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g || '0', 16).toString(16))
    .join(':')}::/64`;
}

/**
 * Token buckets by client address, in memory (each replica its own): `ratePerSecond` sustained, `burst` at
 * once. At most `maxAddresses` buckets: the least recently used is dropped first (a dropped bucket comes back
 * full, which only ever errs towards letting a request through). About 100 bytes per address.
 */
export function createAddressLimiter(o: {
  ratePerSecond: number;
  burst: number;
  maxAddresses?: number;
  now?: () => number;
}): AddressLimiter {
  const now = o.now ?? Date.now;
  const max = o.maxAddresses ?? 50_000;
  const buckets = new Map<string, { tokens: number; at: number }>();
  const current = (key: string) => {
    const t = now();
    const bucket = buckets.get(key);
    const tokens = bucket
      ? Math.min(o.burst, bucket.tokens + ((t - bucket.at) / 1000) * o.ratePerSecond)
      : o.burst;
    buckets.delete(key);
    if (buckets.size >= max) buckets.delete(buckets.keys().next().value!);
    const fresh = { tokens, at: t };
    buckets.set(key, fresh);
    return fresh;
  };
  return {
    take(address) {
      const bucket = current(addressBucket(address));
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { allowed: true };
      }
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / o.ratePerSecond)),
      };
    },
    refund(address) {
      const bucket = buckets.get(addressBucket(address));
      if (bucket) bucket.tokens = Math.min(o.burst, bucket.tokens + 1);
    },
    get size() {
      return buckets.size;
    },
  };
}
