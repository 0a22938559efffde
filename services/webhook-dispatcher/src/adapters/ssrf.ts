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
  /** Why this port may not be connected to, or undefined when it may. */
  portRefusal(port: number): string | undefined;
}

/** Ports webhooks go to unless configured otherwise: 80, 443 and the unprivileged ones (SSH, SMTP, ... are not). */
export const DEFAULT_WEBHOOK_PORTS = '80,443,1024-65535';

/** "80,443,1024-65535" -> its ranges; throws on anything else. */
export function parsePortRanges(spec: string): [number, number][] {
  return spec
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(part);
      const low = Number(m?.[1]);
      const high = Number(m?.[2] ?? m?.[1]);
      if (!m || low < 1 || high > 65_535 || low > high)
        throw new Error(`"${part}" is not a port or a port range`);
      return [low, high] as [number, number];
    });
}

const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/**
 * An IPv6 address in the WHATWG URL's canonical form (hex groups only). ipaddr.js reads a dotted tail after
 * "::" ("::8.8.8.8", as glibc prints IPv4-compatible addresses) as IPv4-mapped (::ffff:8.8.8.8), which would
 * let an IPv4-compatible address pass as its IPv4; the URL parser keeps the two apart.
 */
function canonical(text: string): string {
  if (!text.includes(':')) return text;
  try {
    return new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    return text;
  }
}

/**
 * Only public unicast addresses, unless allowlisted: loopback, private (RFC 1918, IPv6 ULA), link-local
 * (169.254/16 with the cloud metadata address 169.254.169.254, fe80::/10), CGNAT (100.64/10), unspecified,
 * multicast, broadcast and reserved ranges are refused; an IPv4-mapped IPv6 address (::ffff:0:0/96) counts as
 * its IPv4, and the deprecated IPv4-compatible ones (::/96, e.g. ::7f00:1 for 127.0.0.1, which some stacks
 * still route to the IPv4 host) are refused whatever they embed, as are the other IPv4-embedding ranges
 * (NAT64, 6to4, Teredo, SIIT). Allowlist entries are CIDRs ("127.0.0.1/32"), addresses, or host names (every
 * address they resolve to). Ports: only those of `allowedPorts` (80, 443 and 1024-65535 by default).
 */
export function addressPolicy(
  allowlist: readonly string[],
  allowedPorts: readonly [number, number][] = parsePortRanges(DEFAULT_WEBHOOK_PORTS),
): AddressPolicy {
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
        address = ipaddr.parse(canonical(text));
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
      if (range !== 'unicast') return `${text} is a ${range} address`;
      if (address.kind() === 'ipv6' && address.match(IPV4_COMPATIBLE))
        return `${text} is an IPv4-compatible IPv6 address (::/96)`;
      return undefined;
    },
    portRefusal(port) {
      return allowedPorts.some(([low, high]) => port >= low && port <= high)
        ? undefined
        : `port ${port} is not one webhooks are delivered to (allowed: ${allowedPorts
            .map(([low, high]) => (low === high ? `${low}` : `${low}-${high}`))
            .join(', ')})`;
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
