import { describe, expect, it } from 'vitest';
import { addressPolicy, literalRefusal } from './ssrf.js';

describe('the address policy (SSRF protection)', () => {
  const strict = addressPolicy([]);
  it('refuses private, loopback, link-local, CGNAT, metadata and IPv6 local addresses', () => {
    for (const address of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
    ]) {
      expect(strict.refusal(address), address).toBeDefined();
    }
  });

  it('lets public addresses through', () => {
    for (const address of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(strict.refusal(address), address).toBeUndefined();
    }
  });

  it('allows what the allowlist names: CIDRs, addresses and host names', () => {
    const local = addressPolicy(['127.0.0.1/32', '::1', 'hooks.internal']);
    expect(local.refusal('127.0.0.1')).toBeUndefined();
    expect(local.refusal('127.0.0.2')).toBeDefined();
    expect(local.refusal('::1')).toBeUndefined();
    expect(local.refusal('10.0.0.5', 'hooks.internal')).toBeUndefined();
    expect(local.refusal('10.0.0.5', 'other.internal')).toBeDefined();
  });

  it('checks IP literals in URLs, which never go through DNS', () => {
    expect(literalRefusal(strict, '169.254.169.254')).toMatch(/linkLocal/);
    expect(literalRefusal(strict, '[::1]')).toMatch(/loopback/);
    expect(literalRefusal(strict, 'example.com')).toBeUndefined();
  });
});
