import type { OutgoingEvent } from '@mds/kafka';
import type { RequestFingerprint } from './fingerprint.js';

/** Who is asking: the company and API key a request was authenticated as. */
export interface RequestCaller {
  companyId: string;
  keyId: string;
}

/** What makes a holder's completion or release count: the claim is still its own. */
export interface Holder {
  /** This holder's token: a claim taken over since has another. */
  token: string;
  /** An earlier holder may already have published this event id (it died, or timed out). */
  takenOver: boolean;
}

export type Claim =
  | ({ kind: 'new'; eventId: string } & Holder)
  | { kind: 'replay'; statusCode: number; response: unknown }
  | { kind: 'in_flight' }
  | { kind: 'mismatch' };

export interface KeyToClaim {
  key: string;
  fingerprint: RequestFingerprint;
  newEventId: string;
}

export interface Completion {
  key: string;
  holder: Holder;
  statusCode: number;
  response: unknown;
}

/** Idempotency-Key claims, shared by every replica, scoped to the API key. */
export interface IdempotencyStore {
  /**
   * Claims the key for a request with this fingerprint (publishing `newEventId`), or says what holds it: a
   * different request under the key is one whose stored fingerprint the request's does not match.
   */
  claim(apiKeyId: string, key: string, fingerprint: RequestFingerprint, newEventId: string): Promise<Claim>;
  /**
   * `claim` for many keys at once (a batch's items), in their order: one statement for the keys no one holds.
   * Of two items under one key, the first claims it and the later finds it held (in flight, or reused).
   */
  claimMany(apiKeyId: string, claims: readonly KeyToClaim[]): Promise<Claim[]>;
  /** `complete` for many claims at once (one statement). */
  completeMany(apiKeyId: string, completions: readonly Completion[]): Promise<void>;
  /** Stores the response, if the claim is still this holder's; false when another took it over. */
  complete(
    apiKeyId: string,
    key: string,
    holder: Holder,
    statusCode: number,
    response: unknown,
  ): Promise<boolean>;
  /** The publish failed: `no` (nothing written) frees the key; `unknown` lets the next try reuse the event id. */
  release(apiKeyId: string, key: string, written: 'no' | 'unknown', holder: Holder): Promise<void>;
  removeExpired(): Promise<number>;
}

/** The event log (Kafka): resolves once it holds the events; a PublishTimeoutError says what was written. */
export interface EventLog {
  publish(events: readonly OutgoingEvent[], options: { timeoutMs: number }): Promise<void>;
}

export interface Limit {
  /** Bucket name, e.g. "key:<id>:send". */
  bucket: string;
  /** Sustained tokens per second. */
  rate: number;
  /** Most tokens the bucket holds (the burst). */
  capacity: number;
}

export type Verdict =
  { allowed: true; remaining: number } | { allowed: false; retryAfterSeconds: number; limit: Limit };

/** Token buckets shared by every gateway replica. */
export interface RateLimiter {
  /** Takes one token from every bucket, in order; the first refusal answers. */
  check(limits: Limit[]): Promise<Verdict>;
}
