import { describe, expect, it } from 'vitest';
import { addressBucket, createAddressLimiter } from './address-limiter.js';

describe('the per-address limiter', () => {
  it('allows a burst, then the sustained rate, and says when to retry', () => {
    let now = 0;
    const limiter = createAddressLimiter({ ratePerSecond: 2, burst: 3, now: () => now });
    for (let i = 0; i < 3; i++) expect(limiter.take('10.0.0.1')).toEqual({ allowed: true });
    expect(limiter.take('10.0.0.1')).toEqual({ allowed: false, retryAfterSeconds: 1 });
    // Another address has its own bucket.
    expect(limiter.take('10.0.0.2')).toEqual({ allowed: true });
    now += 500;
    expect(limiter.take('10.0.0.1')).toEqual({ allowed: true });
    expect(limiter.take('10.0.0.1').allowed).toBe(false);
  });

  it('gives back the token of a request that authenticated', () => {
    const limiter = createAddressLimiter({ ratePerSecond: 1, burst: 1, now: () => 0 });
    expect(limiter.take('10.0.0.1').allowed).toBe(true);
    limiter.refund('10.0.0.1');
    expect(limiter.take('10.0.0.1').allowed).toBe(true);
    expect(limiter.take('10.0.0.1').allowed).toBe(false);
  });

  it('keeps at most maxAddresses buckets', () => {
    const limiter = createAddressLimiter({ ratePerSecond: 1, burst: 1, maxAddresses: 100, now: () => 0 });
    for (let i = 0; i < 1_000; i++) limiter.take(`10.0.${i >> 8}.${i & 255}`);
    expect(limiter.size).toBe(100);
  });

  it('counts an IPv6 client by its /64 and an IPv4-mapped one as IPv4', () => {
    expect(addressBucket('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
    expect(addressBucket('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(addressBucket('192.0.2.7')).toBe('192.0.2.7');
    const limiter = createAddressLimiter({ ratePerSecond: 1, burst: 1, now: () => 0 });
    expect(limiter.take('2001:db8:1:2::1').allowed).toBe(true);
    expect(limiter.take('2001:db8:1:2::99').allowed).toBe(false);
  });
});
