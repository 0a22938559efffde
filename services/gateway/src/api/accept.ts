import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Counter } from 'prom-client';
import type { z } from 'zod';
import { PublishTimeoutError, type EventPublisher, type OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { fieldErrors, Problem } from '@mds/service-kit';
import { inHop } from '@mds/telemetry';
import type { Acceptance } from '../application/accept.js';
import type { Caller } from '../adapters/api-keys.js';
import type { Claim, Holder, IdempotencyStore } from '../adapters/idempotency.js';
import { callerOf } from './middleware.js';
import { sealRecords, type PersonKeyPort } from '@mds/personal-data';
import { IDEMPOTENCY_KEY_PATTERN } from './schemas.js';

export interface AcceptDeps {
  logger: Logger;
  publisher: EventPublisher;
  idempotency: IdempotencyStore;
  /** The person keys the phone numbers and texts of events are sealed under (cached). */
  personKeys: PersonKeyPort;
  publishTimeoutMs: number;
  now: () => Date;
  newId: () => string;
  accepted: Counter<'endpoint'>;
  refused: Counter<'endpoint' | 'code'>;
}

export interface AcceptedRequest<S extends z.ZodType> {
  path: string;
  schema: S;
  toEvent: (a: Acceptance, body: z.infer<S>) => OutgoingEvent;
  respond: (requestId: string) => object;
}

/** A claimed Idempotency-Key, or none when the request came without one. */
type KeyClaim = { key: string; holder: Holder } | undefined;

/** Validates the body, honours Idempotency-Key, records the request as an event in Kafka, answers 202. */
export function acceptHandler<S extends z.ZodType>(deps: AcceptDeps, request: AcceptedRequest<S>) {
  const handle = async (req: Request, res: Response) => {
    const parsed = request.schema.safeParse(req.body);
    if (!parsed.success) {
      deps.refused.inc({ endpoint: request.path, code: 'validation_failed' });
      throw new Problem(
        422,
        'validation_failed',
        'Validation failed',
        'The request body is not valid; see errors.',
        fieldErrors(parsed.error),
      );
    }
    const caller = callerOf(res);
    const idempotencyKey = req.header('idempotency-key');
    let requestId = deps.newId();
    let claim: KeyClaim;
    if (idempotencyKey !== undefined) {
      const outcome = await claimKey(
        deps,
        caller,
        idempotencyKey,
        `POST ${request.path}`,
        parsed.data,
        requestId,
      );
      if (outcome.kind === 'replay') {
        res.setHeader('Idempotent-Replayed', 'true');
        res.status(outcome.statusCode).json(outcome.response);
        return;
      }
      requestId = outcome.eventId;
      claim = { key: idempotencyKey, holder: outcome };
    }
    const acceptance = {
      requestId,
      companyId: caller.companyId,
      apiKeyId: caller.keyId,
      idempotencyKey: idempotencyKey ?? '',
      at: deps.now(),
    };
    await publishOrRefuse(deps, request.path, request.toEvent(acceptance, parsed.data), caller, claim);
    const body = request.respond(requestId);
    if (claim) {
      // The event is stored, so the answer is 202 whatever happens to this bookkeeping; a retry then
      // finds the claim pending (409) until its lock lapses, and is taken over with the same event_id.
      await deps.idempotency
        .complete(caller.keyId, claim.key, claim.holder, 202, body)
        .catch((e: unknown) => {
          deps.logger.error({ err: e, requestId }, 'could not store the response of an Idempotency-Key');
        });
    }
    deps.accepted.inc({ endpoint: request.path });
    res.status(202).json(body);
  };
  // The first hop of the request's trace: the event it writes carries this span's trace context.
  return (req: Request, res: Response) =>
    inHop('gateway accept', undefined, () => handle(req, res), {
      attributes: { 'mds.endpoint': request.path },
    });
}

/** Claims the key for this request, or says what an earlier request with it left (a replay); else a Problem. */
async function claimKey(
  deps: AcceptDeps,
  caller: Caller,
  idempotencyKey: string,
  operation: string,
  body: unknown,
  requestId: string,
): Promise<Extract<Claim, { kind: 'new' | 'replay' }>> {
  if (!IDEMPOTENCY_KEY_PATTERN.test(idempotencyKey)) {
    throw new Problem(
      400,
      'invalid_idempotency_key',
      'Invalid Idempotency-Key',
      'Idempotency-Key is 1 to 255 visible ASCII characters.',
    );
  }
  const fingerprint = createHash('sha256')
    .update(`${operation}\n${JSON.stringify(body)}`)
    .digest('hex');
  const claim = await deps.idempotency.claim(caller.keyId, idempotencyKey, fingerprint, requestId);
  if (claim.kind === 'mismatch') {
    throw new Problem(
      422,
      'idempotency_key_reused',
      'Idempotency-Key reused',
      'This Idempotency-Key was used with a different request.',
    );
  }
  if (claim.kind === 'in_flight') {
    throw new Problem(
      409,
      'idempotency_request_in_progress',
      'Request in progress',
      'A request with this Idempotency-Key is still being handled; retry shortly.',
      undefined,
      { 'Retry-After': '1' },
    );
  }
  return claim;
}

/** Resolves once Kafka holds the event; otherwise frees the key's claim and throws the 503. */
async function publishOrRefuse(
  deps: AcceptDeps,
  path: string,
  event: OutgoingEvent,
  caller: Caller,
  claim: KeyClaim,
): Promise<void> {
  let sealed: OutgoingEvent;
  try {
    sealed = { ...event, record: (await sealRecords(deps.personKeys, [event.record]))[0]! };
  } catch (error) {
    if (claim) await releaseClaim(deps, caller, claim, 'no');
    deps.logger.error({ err: error, requestId: event.key }, 'cannot seal the personal data of a request');
    deps.refused.inc({ endpoint: path, code: 'personal_data_keys_unavailable' });
    throw new Problem(
      503,
      'personal_data_keys_unavailable',
      'Service unavailable',
      'The request cannot be stored safely right now; retry shortly.',
      undefined,
      { 'Retry-After': '1' },
    );
  }
  try {
    await deps.publisher.publish([sealed], { timeoutMs: deps.publishTimeoutMs });
    return;
  } catch (error) {
    const written = error instanceof PublishTimeoutError ? error.written : 'unknown';
    if (claim) await releaseClaim(deps, caller, claim, written);
    deps.logger.error({ err: error, requestId: event.key, written }, 'Kafka did not take the event');
    deps.refused.inc({ endpoint: path, code: 'broker_unavailable' });
    throw new Problem(
      503,
      'broker_unavailable',
      'Service unavailable',
      written === 'no'
        ? 'The request was not accepted: the event log is unavailable. Retry shortly.'
        : 'The event log did not confirm the request in time; it may or may not have been accepted. Retry with the same Idempotency-Key to be sure it is accepted once.',
      undefined,
      { 'Retry-After': '5' },
    );
  }
}

async function releaseClaim(
  deps: AcceptDeps,
  caller: Caller,
  claim: NonNullable<KeyClaim>,
  written: Parameters<IdempotencyStore['release']>[2],
): Promise<void> {
  await deps.idempotency.release(caller.keyId, claim.key, written, claim.holder).catch((e: unknown) => {
    // The 503 stands; the claim lapses after its lock time.
    deps.logger.error({ err: e }, 'could not release an Idempotency-Key');
  });
}
