import { describe, expect, it } from 'vitest';
import { addressPolicy, literalRefusal, parsePortRanges } from './ssrf.js';

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

  it('refuses IPv4-compatible IPv6 addresses (::/96), whatever IPv4 they embed, and the other embeddings', () => {
    for (const address of [
      '::7f00:1',
      '::127.0.0.1',
      '::a00:1',
      '::8.8.8.8',
      '::808:808',
      '::ffff:0:7f00:1',
      '64:ff9b::7f00:1',
      '2002:7f00:1::',
    ]) {
      expect(strict.refusal(address), address).toBeDefined();
    }
    expect(strict.refusal('::808:808')).toMatch(/IPv4-compatible/);
    expect(literalRefusal(strict, '[::127.0.0.1]')).toMatch(/IPv4-compatible/);
    // IPv4-mapped ones count as their IPv4, in either spelling.
    expect(strict.refusal('::ffff:7f00:1')).toMatch(/loopback/);
    expect(strict.refusal('::ffff:808:808')).toBeUndefined();
  });

  it('allows ports 80, 443 and 1024 and above by default, and what is configured otherwise', () => {
    for (const port of [80, 443, 1024, 8080, 65_535])
      expect(strict.portRefusal(port), String(port)).toBeUndefined();
    for (const port of [22, 25, 81, 442, 444, 1023])
      expect(strict.portRefusal(port), String(port)).toMatch(/not one/);
    const narrow = addressPolicy([], parsePortRanges('443, 8443-8444'));
    expect(narrow.portRefusal(443)).toBeUndefined();
    expect(narrow.portRefusal(8444)).toBeUndefined();
    expect(narrow.portRefusal(80)).toBeDefined();
    expect(narrow.portRefusal(8445)).toMatch(/allowed: 443, 8443-8444/);
    for (const bad of ['0', '70000', '90-80', 'http']) expect(() => parsePortRanges(bad), bad).toThrow();
  });
});
