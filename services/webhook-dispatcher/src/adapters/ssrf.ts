import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The address is not one webhooks are delivered to. */
export class BlockedAddressError extends Error {
  override readonly name = 'BlockedAddressError';
  readonly code = 'EBLOCKEDADDRESS';
}

export interface AddressPolicy {
  /** Why this address may not be connected to, or undefined when it may. */
  refusal(address: string, hostname?: string): string | undefined;
}

/**
 * Only public unicast addresses, unless allowlisted: loopback, private (RFC 1918, IPv6 ULA), link-local
 * (169.254/16 with the cloud metadata address 169.254.169.254, fe80::/10), CGNAT (100.64/10), unspecified,
 * multicast, broadcast and reserved ranges are refused; an IPv4-mapped IPv6 address counts as its IPv4.
 * Allowlist entries are CIDRs ("127.0.0.1/32"), addresses, or host names (every address they resolve to).
 */
export function addressPolicy(allowlist: readonly string[]): AddressPolicy {
  const networks: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  const hosts = new Set<string>();
  for (const entry of allowlist) {
    if (entry.includes('/')) networks.push(ipaddr.parseCIDR(entry));
    else if (ipaddr.isValid(entry)) {
      const address = ipaddr.parse(entry);
      networks.push([address, address.kind() === 'ipv4' ? 32 : 128]);
    } else hosts.add(entry.toLowerCase());
  }
  return {
    refusal(text, hostname) {
      let address: ipaddr.IPv4 | ipaddr.IPv6;
      try {
        address = ipaddr.parse(text);
      } catch {
        return `"${text}" is not an IP address`;
      }
      if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()) {
        address = (address as ipaddr.IPv6).toIPv4Address();
      }
      if (hostname && hosts.has(hostname.toLowerCase())) return undefined;
      if (networks.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits)))
        return undefined;
      const range = address.range();
      return range === 'unicast' ? undefined : `${text} is a ${range} address`;
    },
  };
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `dns.lookup` for net.connect that refuses blocked addresses: the check happens when connecting, on the
 * addresses actually used, so a name that resolves elsewhere later (DNS rebinding) is still caught.
 */
export function guardedLookup(policy: AddressPolicy) {
  return (
    hostname: string,
    options: LookupAllOptions | Record<string, unknown>,
    callback: LookupCallback,
  ) => {
    dnsLookup(hostname, { ...(options as object), all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      for (const a of addresses) {
        const refusal = policy.refusal(a.address, hostname);
        if (refusal) return callback(new BlockedAddressError(`refused ${hostname}: ${refusal}`), []);
      }
      if ((options as { all?: boolean }).all) return callback(null, addresses);
      const first = addresses[0]!;
      callback(null, first.address, first.family);
    });
  };
}

/** An IP literal host never goes through the lookup: it is checked before connecting. */
export function literalRefusal(policy: AddressPolicy, hostname: string): string | undefined {
  const bare = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) ? policy.refusal(bare) : undefined;
}
