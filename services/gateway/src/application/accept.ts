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
  const acceptance: Acceptance = {
    requestId,
    companyId: caller.companyId,
    apiKeyId: caller.keyId,
    idempotencyKey: idempotencyKey ?? '',
    at: deps.now(),
  };
  const refusal = await publishOrRelease(deps, command.toEvent(acceptance, command.body), caller, claim);
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

/** Undefined once the log holds the event; otherwise frees the key's claim and says why it was refused. */
async function publishOrRelease(
  deps: AcceptDeps,
  event: OutgoingEvent,
  caller: RequestCaller,
  claim: KeyClaim,
): Promise<Extract<AcceptOutcome, { kind: 'refused' }> | undefined> {
  let sealed: OutgoingEvent;
  try {
    sealed = { ...event, record: (await sealRecords(deps.personKeys, [event.record]))[0]! };
  } catch (error) {
    if (claim) await releaseClaim(deps, caller, claim, 'no');
    deps.logger.error({ err: error, requestId: event.key }, 'cannot seal the personal data of a request');
    return { kind: 'refused', reason: 'personal_data_keys_unavailable' };
  }
  try {
    await deps.publisher.publish([sealed], { timeoutMs: deps.publishTimeoutMs });
    return undefined;
  } catch (error) {
    const written = error instanceof PublishTimeoutError ? error.written : 'unknown';
    if (claim) await releaseClaim(deps, caller, claim, written);
    deps.logger.error({ err: error, requestId: event.key, written }, 'Kafka did not take the event');
    return { kind: 'refused', reason: 'broker_unavailable', written };
  }
}

async function releaseClaim(
  deps: AcceptDeps,
  caller: RequestCaller,
  claim: NonNullable<KeyClaim>,
  written: 'no' | 'unknown',
): Promise<void> {
  await deps.idempotency.release(caller.keyId, claim.key, written, claim.holder).catch((e: unknown) => {
    // The refusal stands; the claim lapses after its lock time.
    deps.logger.error({ err: e }, 'could not release an Idempotency-Key');
  });
}
