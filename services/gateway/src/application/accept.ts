import { PublishTimeoutError, type OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { sealRecords, type PersonKeyPort } from '@mds/personal-data';
import type { Acceptance } from './events.js';
import type { Fingerprinter } from './fingerprint.js';
import type { EventLog, Holder, IdempotencyStore, RequestCaller } from './ports.js';

export interface AcceptDeps {
  logger: Logger;
  publisher: EventLog;
  idempotency: IdempotencyStore;
  /** The person keys the phone numbers and texts of events are sealed under (cached). */
  personKeys: PersonKeyPort;
  publishTimeoutMs: number;
  /** Keyed fingerprints of requests, for their Idempotency-Keys. */
  fingerprint: Fingerprinter;
  now: () => Date;
  newId: () => string;
}

/** One valid request to record: who asks, under which Idempotency-Key, the event it becomes, the answer. */
export interface AcceptCommand<B> {
  /** "POST /send": an Idempotency-Key is scoped to one operation and body. */
  operation: string;
  caller: RequestCaller;
  idempotencyKey: string | undefined;
  body: B;
  toEvent: (a: Acceptance, body: B) => OutgoingEvent;
  respond: (requestId: string) => object;
}

export type AcceptOutcome =
  /** The event is in the log: 202 with `body`. */
  | { kind: 'accepted'; body: object }
  /** An earlier request with this Idempotency-Key was answered: the same answer again. */
  | { kind: 'replayed'; statusCode: number; response: unknown }
  | { kind: 'refused'; reason: 'idempotency_key_reused' | 'idempotency_request_in_progress' }
  | { kind: 'refused'; reason: 'personal_data_keys_unavailable' }
  /** The log did not take the event; `written` says whether it may have anyway. */
  | { kind: 'refused'; reason: 'broker_unavailable'; written: 'no' | 'unknown' };

/** A claimed Idempotency-Key, or none when the request came without one. */
type KeyClaim = { key: string; holder: Holder } | undefined;

const acceptanceOf = (
  caller: RequestCaller,
  requestId: string,
  idempotencyKey: string | undefined,
  at: Date,
): Acceptance => ({
  requestId,
  companyId: caller.companyId,
  apiKeyId: caller.keyId,
  idempotencyKey: idempotencyKey ?? '',
  at,
});

/**
 * Accepting a request: honours its Idempotency-Key (claim, replay, 409/422), seals its personal data, records it
 * as an event in the log, and stores the answer for the key. Refusals are outcomes; the caller says them in HTTP.
 */
export async function acceptRequest<B>(deps: AcceptDeps, command: AcceptCommand<B>): Promise<AcceptOutcome> {
  const { caller, idempotencyKey } = command;
  let requestId = deps.newId();
  let claim: KeyClaim;
  if (idempotencyKey !== undefined) {
    const fingerprint = deps.fingerprint(command.operation, command.body);
    const claimed = await deps.idempotency.claim(caller.keyId, idempotencyKey, fingerprint, requestId);
    if (claimed.kind === 'mismatch') return { kind: 'refused', reason: 'idempotency_key_reused' };
    if (claimed.kind === 'in_flight') return { kind: 'refused', reason: 'idempotency_request_in_progress' };
    if (claimed.kind === 'replay')
      return { kind: 'replayed', statusCode: claimed.statusCode, response: claimed.response };
    requestId = claimed.eventId;
    claim = { key: idempotencyKey, holder: claimed };
  }
  const event = command.toEvent(acceptanceOf(caller, requestId, idempotencyKey, deps.now()), command.body);
  const refusal = await publishOrRelease(deps, [event], caller, claim ? [claim] : []);
  if (refusal) return refusal;
  const body = command.respond(requestId);
  if (claim) {
    // The event is stored, so the answer is 202 whatever happens to this bookkeeping; a retry then
    // finds the claim pending (409) until its lock lapses, and is taken over with the same event_id.
    await deps.idempotency.complete(caller.keyId, claim.key, claim.holder, 202, body).catch((e: unknown) => {
      deps.logger.error({ err: e, requestId }, 'could not store the response of an Idempotency-Key');
    });
  }
  return { kind: 'accepted', body };
}

/** Refusals of the system's own (keys, the log), whatever the request. */
type SystemRefusal = Extract<
  AcceptOutcome,
  { kind: 'refused'; reason: 'personal_data_keys_unavailable' | 'broker_unavailable' }
>;

/** Undefined once the log holds the events; otherwise frees their keys' claims and says why they were refused. */
async function publishOrRelease(
  deps: AcceptDeps,
  events: readonly OutgoingEvent[],
  caller: RequestCaller,
  claims: readonly NonNullable<KeyClaim>[],
): Promise<SystemRefusal | undefined> {
  const requests =
    events.length === 1 ? { requestId: events[0]!.key } : { requestIds: events.map((e) => e.key) };
  let sealed: OutgoingEvent[];
  try {
    const records = await sealRecords(
      deps.personKeys,
      events.map((e) => e.record),
    );
    sealed = events.map((e, i) => ({ ...e, record: records[i]! }));
  } catch (error) {
    await releaseClaims(deps, caller, claims, 'no');
    deps.logger.error({ err: error, ...requests }, 'cannot seal the personal data of a request');
    return { kind: 'refused', reason: 'personal_data_keys_unavailable' };
  }
  try {
    await deps.publisher.publish(sealed, { timeoutMs: deps.publishTimeoutMs });
    return undefined;
  } catch (error) {
    // Of many events the log may hold some whatever the first failure says: their keys keep their event ids.
    const written = error instanceof PublishTimeoutError && events.length === 1 ? error.written : 'unknown';
    await releaseClaims(deps, caller, claims, written);
    deps.logger.error({ err: error, ...requests, written }, 'Kafka did not take the event');
    return { kind: 'refused', reason: 'broker_unavailable', written };
  }
}

async function releaseClaims(
  deps: AcceptDeps,
  caller: RequestCaller,
  claims: readonly NonNullable<KeyClaim>[],
  written: 'no' | 'unknown',
): Promise<void> {
  await Promise.all(
    claims.map((claim) =>
      deps.idempotency.release(caller.keyId, claim.key, written, claim.holder).catch((e: unknown) => {
        // The refusal stands; the claim lapses after its lock time.
        deps.logger.error({ err: e }, 'could not release an Idempotency-Key');
      }),
    ),
  );
}

/** Many valid requests of one operation, each with its own Idempotency-Key, recorded together. */
export interface BatchCommand<B> extends Omit<AcceptCommand<B>, 'idempotencyKey' | 'body'> {
  items: readonly { idempotencyKey: string | undefined; body: B }[];
}

export type BatchItemOutcome =
  /** In the log: now, or by an earlier request with its Idempotency-Key (the same event_id). */
  | { kind: 'accepted'; requestId: string }
  | { kind: 'refused'; reason: 'idempotency_key_reused' | 'idempotency_request_in_progress' };

export type BatchOutcome = { kind: 'accepted'; items: BatchItemOutcome[] } | SystemRefusal;

/**
 * Accepting a batch: each item as `acceptRequest` would a request of its own (its Idempotency-Key claimed,
 * replayed or refused), with one claim statement, one sealing and one publish for all of them. A failure of the
 * keys or the log refuses the batch as a whole (the log may hold some of its events: their keys keep their ids).
 */
export async function acceptBatch<B>(deps: AcceptDeps, command: BatchCommand<B>): Promise<BatchOutcome> {
  const { caller, items } = command;
  const requestIds = items.map(() => deps.newId());
  const keyed = items.flatMap((item, index) =>
    item.idempotencyKey === undefined ? [] : [{ index, key: item.idempotencyKey }],
  );
  const claimed = await deps.idempotency.claimMany(
    caller.keyId,
    keyed.map(({ index, key }) => ({
      key,
      fingerprint: deps.fingerprint(command.operation, items[index]!.body),
      newEventId: requestIds[index]!,
    })),
  );
  const outcomes: (BatchItemOutcome | undefined)[] = items.map(() => undefined);
  const claims = new Map<number, NonNullable<KeyClaim>>();
  keyed.forEach(({ index, key }, i) => {
    const claim = claimed[i]!;
    if (claim.kind === 'mismatch') outcomes[index] = { kind: 'refused', reason: 'idempotency_key_reused' };
    else if (claim.kind === 'in_flight')
      outcomes[index] = { kind: 'refused', reason: 'idempotency_request_in_progress' };
    else if (claim.kind === 'replay')
      outcomes[index] = { kind: 'accepted', requestId: (claim.response as { event_id: string }).event_id };
    else {
      requestIds[index] = claim.eventId;
      claims.set(index, { key, holder: claim });
    }
  });
  const fresh = items.flatMap((_, index) => (outcomes[index] ? [] : [index]));
  const at = deps.now();
  const events = fresh.map((index) =>
    command.toEvent(
      acceptanceOf(caller, requestIds[index]!, items[index]!.idempotencyKey, at),
      items[index]!.body,
    ),
  );
  if (events.length > 0) {
    const refusal = await publishOrRelease(deps, events, caller, [...claims.values()]);
    if (refusal) return refusal;
  }
  // As for one request: the events are stored, so the items are accepted whatever happens to this bookkeeping.
  await deps.idempotency
    .completeMany(
      caller.keyId,
      [...claims].map(([index, claim]) => ({
        ...claim,
        statusCode: 202,
        response: command.respond(requestIds[index]!),
      })),
    )
    .catch((e: unknown) => {
      deps.logger.error({ err: e }, 'could not store the responses of Idempotency-Keys');
    });
  for (const index of fresh) outcomes[index] = { kind: 'accepted', requestId: requestIds[index]! };
  return { kind: 'accepted', items: outcomes as BatchItemOutcome[] };
}
