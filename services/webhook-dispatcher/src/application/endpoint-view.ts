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
export function createEndpointView(o: EndpointViewOptions): EndpointView {
  const now = o.now ?? (() => performance.now());
  const maxCompanies = o.maxCompanies ?? 50_000;
  const entries = new Map<string, Entry>();
  const reads = new Map<string, Promise<Endpoint[]>>();
  /** Numbers changes: the change count when each company last changed, and when everything did. */
  let changes = 0;
  const lastChange = new Map<string, number>();
  let clearedAt = 0;
  /** Since when the follower owns its partitions; undefined while it does not. */
  let followingSince: number | undefined;

  const reliableFrom = () => (followingSince === undefined ? Infinity : followingSince + o.provisionalMs);

  function read(companyId: string): Promise<Endpoint[]> {
    const startedAt = now();
    const changeNo = changes;
    const reliable = startedAt >= reliableFrom();
    o.onLoad?.();
    const pending = o.load(companyId).then(
      (endpoints) => {
        if (reads.get(companyId) === pending) reads.delete(companyId);
        const stale = (lastChange.get(companyId) ?? -1) >= changeNo || clearedAt > changeNo;
        if (!stale)
          keep(companyId, { endpoints, trustedUntil: reliable ? Infinity : startedAt + o.provisionalMs });
        return endpoints;
      },
      (error: unknown) => {
        if (reads.get(companyId) === pending) reads.delete(companyId);
        throw error;
      },
    );
    reads.set(companyId, pending);
    return pending;
  }

  function keep(companyId: string, entry: Entry): void {
    entries.delete(companyId);
    entries.set(companyId, entry);
    while (entries.size > maxCompanies) entries.delete(entries.keys().next().value!);
  }

  function changed(companyId: string): void {
    lastChange.set(companyId, changes++);
    entries.delete(companyId);
    // A read in flight may predate the change: later callers read again.
    reads.delete(companyId);
  }

  function clear(): void {
    clearedAt = ++changes;
    lastChange.clear();
    entries.clear();
    reads.clear();
  }

  return {
    endpoints(companyId) {
      const entry = entries.get(companyId);
      if (entry && entry.trustedUntil > now()) return Promise.resolve(entry.endpoints);
      return reads.get(companyId) ?? read(companyId);
    },
    async disable(endpoint, reason) {
      try {
        return await o.disable(endpoint, reason);
      } finally {
        changed(endpoint.companyId);
      }
    },
    changed,
    clear,
    following(assigned) {
      if (assigned && followingSince !== undefined) return;
      // Lists kept while it followed may miss what happens until it follows again.
      if (!assigned && followingSince !== undefined) clear();
      followingSince = assigned ? now() : undefined;
    },
  };
}
