import type { Endpoint, EndpointDirectory, EndpointKey } from './ports.js';

export interface EndpointViewOptions {
  /** Every endpoint of a company from the registry (ListWebhookEndpoints in production). */
  load(companyId: string): Promise<Endpoint[]>;
  /** DisableWebhookEndpoint in production. */
  disable(endpoint: EndpointKey, reason: string): Promise<boolean>;
  /**
   * How long a list read while the account follower may miss changes (not assigned yet, or only just, so its
   * position at the end of the log may be later than the read) is trusted; the rest are kept until changed.
   */
  provisionalMs: number;
  /** Companies kept at most (the oldest read goes first). */
  maxCompanies?: number;
  /** Monotonic milliseconds. */
  now?: () => number;
  /** Called with each read from the registry (a metric: steady state reads none). */
  onLoad?: () => void;
}

/** The directory the dispatcher reads, kept fresh by the account follower. */
export interface EndpointView extends EndpointDirectory {
  /** Something of the company changed in the account log: its list is read again when next needed. */
  changed(companyId: string): void;
  /** Everything may have changed (an event this build cannot read): every list is read again. */
  clear(): void;
  /** The follower owns its partitions (true) or lost them (false): changes meanwhile go unseen. */
  following(assigned: boolean): void;
}

interface Entry {
  endpoints: Endpoint[];
  /** Monotonic ms until which the list is trusted; Infinity: until the account log says it changed. */
  trustedUntil: number;
}

/**
 * Each company's endpoints in memory, read from the registry once and kept until an account event of the company
 * arrives (the follower calls `changed`): no query per notification. A read that races a change is never kept
 * (each change is numbered, and a read started before the company's last change is thrown away), and a list
 * read while the follower could miss changes is trusted for `provisionalMs` only.
 */
class MemoryEndpointView implements EndpointView {
  private readonly now: () => number;
  private readonly maxCompanies: number;
  private readonly entries = new Map<string, Entry>();
  private readonly reads = new Map<string, Promise<Endpoint[]>>();
  /** Numbers changes: the change count when each company last changed, and when everything did. */
  private changes = 0;
  private readonly lastChange = new Map<string, number>();
  private clearedAt = 0;
  /** Since when the follower owns its partitions; undefined while it does not. */
  private followingSince: number | undefined;

  constructor(private readonly o: EndpointViewOptions) {
    this.now = o.now ?? (() => performance.now());
    this.maxCompanies = o.maxCompanies ?? 50_000;
  }

  endpoints(companyId: string): Promise<Endpoint[]> {
    const entry = this.entries.get(companyId);
    if (entry && entry.trustedUntil > this.now()) return Promise.resolve(entry.endpoints);
    return this.reads.get(companyId) ?? this.read(companyId);
  }

  async disable(endpoint: EndpointKey, reason: string): Promise<boolean> {
    try {
      return await this.o.disable(endpoint, reason);
    } finally {
      this.changed(endpoint.companyId);
    }
  }

  changed(companyId: string): void {
    this.lastChange.set(companyId, this.changes++);
    this.entries.delete(companyId);
    // A read in flight may predate the change: later callers read again.
    this.reads.delete(companyId);
  }

  clear(): void {
    this.clearedAt = ++this.changes;
    this.lastChange.clear();
    this.entries.clear();
    this.reads.clear();
  }

  following(assigned: boolean): void {
    if (assigned && this.followingSince !== undefined) return;
    // Lists kept while it followed may miss what happens until it follows again.
    if (!assigned && this.followingSince !== undefined) this.clear();
    this.followingSince = assigned ? this.now() : undefined;
  }

  private reliableFrom(): number {
    return this.followingSince === undefined ? Infinity : this.followingSince + this.o.provisionalMs;
  }

  private read(companyId: string): Promise<Endpoint[]> {
    const startedAt = this.now();
    const changeNo = this.changes;
    const reliable = startedAt >= this.reliableFrom();
    this.o.onLoad?.();
    const settled = () => {
      if (this.reads.get(companyId) === pending) this.reads.delete(companyId);
    };
    const pending = this.o.load(companyId).then(
      (endpoints) => {
        settled();
        const stale = (this.lastChange.get(companyId) ?? -1) >= changeNo || this.clearedAt > changeNo;
        const trustedUntil = reliable ? Infinity : startedAt + this.o.provisionalMs;
        if (!stale) this.keep(companyId, { endpoints, trustedUntil });
        return endpoints;
      },
      (error: unknown) => {
        settled();
        throw error;
      },
    );
    this.reads.set(companyId, pending);
    return pending;
  }

  private keep(companyId: string, entry: Entry): void {
    this.entries.delete(companyId);
    this.entries.set(companyId, entry);
    while (this.entries.size > this.maxCompanies) this.entries.delete(this.entries.keys().next().value!);
  }
}

export function createEndpointView(o: EndpointViewOptions): EndpointView {
  return new MemoryEndpointView(o);
}
