import type { AccountEvent, ClientEvent, Complete } from '@mds/contracts';
import type { AccountState } from '../domain/accounts.js';
import type { Link } from '../domain/links.js';

/** What routing reads: companies' accounts and the links of (company, phone) pairs, from the registry's state. */
export interface RoutingState {
  accounts(companyIds: readonly string[]): Promise<Map<string, AccountState>>;
  linksOfPhones(pairs: readonly { companyId: string; phone: string }[]): Promise<Map<string, Link[]>>;
}

export const linkKey = (companyId: string, phone: string) => `${companyId}/${phone}`;

/** A map that forgets its least recently used entries beyond `capacity` and entries older than `ttlMs`. */
class Recent<V> {
  private readonly entries = new Map<string, { value: V; at: number }>();

  constructor(
    private readonly capacity: number,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    this.entries.delete(key);
    if (this.now() - hit.at > this.ttlMs) return undefined;
    this.entries.set(key, hit);
    return hit.value;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, at: this.now() });
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * The accounts and links routing needs, kept in memory: read from the registry's state once, then kept
 * fresh by the log (every account or client event drops what it changes, and the next message reads it
 * again). The registry commits its state before its events reach the log, so a read after an event is at
 * least as new as the event. Entries also expire after `ttlMs`, and the least used go beyond the capacity.
 */
export function createRoutingView(o: {
  state: RoutingState;
  capacity?: number;
  ttlMs?: number;
  now?: () => number;
}): RoutingState & {
  /** Drops what an event of mds.account.v1 or mds.client.v1 changes. */
  forget(record: Complete<AccountEvent> | Complete<ClientEvent>): void;
  /** Drops what is known of a company and one of its numbers (they are read again next time). */
  drop(companyId: string, phone: string): void;
  /** Drops everything (each company and number is read again as it is needed). */
  clear(): void;
  size(): { accounts: number; links: number };
} {
  const now = o.now ?? Date.now;
  const accounts = new Recent<AccountState | null>(o.capacity ?? 100_000, o.ttlMs ?? 300_000, now);
  const links = new Recent<Link[]>(o.capacity ?? 100_000, o.ttlMs ?? 300_000, now);

  return {
    async accounts(companyIds) {
      const out = new Map<string, AccountState>();
      const missing: string[] = [];
      for (const id of new Set(companyIds)) {
        const hit = accounts.get(id);
        if (hit === undefined) missing.push(id);
        else if (hit) out.set(id, hit);
      }
      if (missing.length > 0) {
        const read = await o.state.accounts(missing);
        for (const id of missing) {
          const account = read.get(id) ?? null;
          accounts.set(id, account);
          if (account) out.set(id, account);
        }
      }
      return out;
    },
    async linksOfPhones(pairs) {
      const out = new Map<string, Link[]>();
      const missing: { companyId: string; phone: string }[] = [];
      for (const p of pairs) {
        const key = linkKey(p.companyId, p.phone);
        if (out.has(key)) continue;
        const hit = links.get(key);
        if (hit) out.set(key, hit);
        else {
          missing.push(p);
          out.set(key, []);
        }
      }
      if (missing.length > 0) {
        const read = await o.state.linksOfPhones(missing);
        for (const p of missing) {
          const key = linkKey(p.companyId, p.phone);
          const found = read.get(key) ?? [];
          links.set(key, found);
          out.set(key, found);
        }
      }
      return out;
    },
    forget(record) {
      const companyId = record.metadata.companyId;
      const event = record.event;
      switch (event.$case) {
        case 'clientLinked':
        case 'clientUnlinked':
        case 'clientLinkReachabilityChanged':
          return links.delete(linkKey(companyId, event.value.phoneNumber));
        case 'clientPhoneChanged':
          links.delete(linkKey(companyId, event.value.oldPhone));
          return links.delete(linkKey(companyId, event.value.newPhone));
        case 'clientForgotten':
          // Names no number (only the subject): rare enough to read every link again.
          return links.clear();
        default:
          // Every account event: the company's bots, default bots and webhook live in one document.
          return accounts.delete(companyId);
      }
    },
    drop(companyId, phone) {
      accounts.delete(companyId);
      links.delete(linkKey(companyId, phone));
    },
    clear() {
      accounts.clear();
      links.clear();
    },
    size: () => ({ accounts: accounts.size, links: links.size }),
  };
}

export type RoutingView = ReturnType<typeof createRoutingView>;
