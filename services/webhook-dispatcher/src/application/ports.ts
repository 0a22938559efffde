import type { CleanText } from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';
import type { AttemptResult } from '../domain/schedule.js';

/** A notification to store and deliver: its body is the exact bytes signed and sent on every attempt. */
export interface NewDelivery {
  webhookId: string;
  sourceEventId: string;
  companyId: string;
  /** The endpoint it goes to: one delivery per (notification, endpoint subscribed to its type). */
  endpointId: string;
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
  endpointId: string;
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
    /** The next attempt is a manual one (a deferral keeps it so; any attempt made clears it). */
    manual: boolean;
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
    /** Endpoints with no free slot here: none of their rows is taken. */
    fullEndpoints: readonly EndpointKey[];
    /** Endpoints with something in flight here and what they have left; any other may take `defaultSlots`. */
    freeSlots: readonly (EndpointKey & { free: number })[];
    defaultSlots: number;
  }): Promise<ClaimedDelivery[]>;
  complete(completions: readonly Completion[]): Promise<Set<string>>;
  /**
   * Moves endpoints' failure clocks: one whose results include a success (`reset`) gets `since` (its first
   * failure after the last success, or none); any other keeps a running clock, or starts one at `since`.
   * Returns each endpoint's clock by endpointKey.
   */
  moveFailureClocks(
    changes: readonly (EndpointKey & { reset: boolean; since: Date | null; at: Date })[],
  ): Promise<Map<string, Date | null>>;
  oldestDue(now: Date): Promise<Date | null>;
}

/** One POST to an endpoint and how it went. */
export interface SentAttempt {
  result: AttemptResult;
  latencyMs: number;
  /** The start of the response body (or nothing): the endpoint's words, cleaned (@mds/contracts' cleanText). */
  responseExcerpt: CleanText;
}

/** Sends webhook requests (undici in production, with the address policy checked at connect time). */
export interface WebhookSender {
  send(url: string, headers: Record<string, string>, body: string, now: Date): Promise<SentAttempt>;
  close(): Promise<void>;
}

/** One endpoint of one company. */
export interface EndpointKey {
  companyId: string;
  endpointId: string;
}

/** The key of an endpoint in maps (endpoint ids never hold "/"). */
export const endpointKey = (e: EndpointKey): string => `${e.companyId}/${e.endpointId}`;

/** A company's webhook endpoint, as client-registry keeps it. */
export interface Endpoint {
  endpointId: string;
  url: string;
  /** The notification types it receives; empty: all. */
  eventTypes: readonly string[];
  enabled: boolean;
  /** Requests per second at most (per replica); undefined: no limit of its own. */
  rateLimitPerSecond: number | undefined;
  /** Secrets to sign with now: the current one and rotated-out ones not yet expired. */
  secrets: { secret: string; expiresAt?: Date }[];
}

/** The companies' webhook endpoints (client-registry's, over gRPC in production). */
export interface EndpointDirectory {
  /**
   * Every endpoint of the company, enabled or not (none: empty), from memory unless it changed since it was
   * read. Throws @mds/registry-client's RegistryError when client-registry cannot be asked (try again later).
   */
  endpoints(companyId: string): Promise<Endpoint[]>;
  /** Tells the registry to disable one endpoint (410, or failing for too long); false if it already was. */
  disable(endpoint: EndpointKey, reason: string): Promise<boolean>;
}
