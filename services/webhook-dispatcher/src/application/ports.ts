import type { OutgoingEvent } from '@mds/kafka';

/** A notification to store and deliver: its body is the exact bytes signed and sent on every attempt. */
export interface NewDelivery {
  webhookId: string;
  sourceEventId: string;
  companyId: string;
  kind: string;
  subjectId: string;
  body: string;
  createdAt: Date;
  /** W3C trace context of the event that asked for the notification: its delivery continues that trace. */
  traceparent?: string;
  tracestate?: string;
}

/** A delivery this worker holds the lease of. */
export interface ClaimedDelivery {
  webhookId: string;
  leaseId: string;
  sourceEventId: string;
  companyId: string;
  kind: string;
  subjectId: string;
  body: string;
  /** Attempts made before this one. */
  attempts: number;
  manual: boolean;
  traceparent?: string;
  tracestate?: string;
}

/** One attempt, as the delivery's attempt log keeps it. */
export interface AttemptEntry {
  attempt: number;
  trigger: 'scheduled' | 'manual';
  url: string;
  statusCode: number;
  latencyMs: number;
  outcome: string;
  error: string | null;
  responseExcerpt: string;
  nextAttemptAt: Date | null;
  attemptedAt: Date;
}

/** The result of one leased delivery: the row's new state, its attempt (none when deferred), its events. */
export interface Completion {
  claim: ClaimedDelivery;
  update: {
    status: 'pending' | 'delivered' | 'failed';
    attempts: number;
    nextAttemptAt: Date | null;
    lastStatusCode: number | null;
    lastError: string | null;
    finishedAt: Date | null;
  };
  attempt?: AttemptEntry;
  events: OutgoingEvent[];
  /** Whether this attempt reached the endpoint and how it went (for the failure clock); absent if it did not. */
  health?: { succeeded: boolean; at: Date };
}

/**
 * A new delivery and what its arrival made of it: attempted already (`done`, with the result), being
 * attempted by this replica (`leased`), or waiting for a claim (`pending`: its company had no free slot).
 */
export interface Arrival {
  delivery: NewDelivery;
  state: { kind: 'done'; completion: Completion } | { kind: 'leased' } | { kind: 'pending' };
}

/** Where deliveries, their schedule and their results live (PostgreSQL in production). */
export interface DeliveryStore {
  ingest(arrivals: readonly Arrival[], lease: { leaseId: string; seconds: number }): Promise<Set<string>>;
  /** The source events among these that have a delivery already. */
  stored(sourceEventIds: readonly string[]): Promise<Set<string>>;
  claim(o: {
    now: Date;
    limit: number;
    leaseId: string;
    leaseSeconds: number;
    fullCompanies: readonly string[];
    freeSlots: ReadonlyMap<string, number>;
    defaultSlots: number;
  }): Promise<ClaimedDelivery[]>;
  complete(completions: readonly Completion[]): Promise<Set<string>>;
  /**
   * Moves failure clocks: a company whose results include a success (`reset`) gets `since` (its first failure
   * after the last success, or none); any other keeps a running clock, or starts one at `since`.
   */
  moveFailureClocks(
    changes: readonly { companyId: string; reset: boolean; since: Date | null; at: Date }[],
  ): Promise<Map<string, Date | null>>;
  oldestDue(now: Date): Promise<Date | null>;
}
