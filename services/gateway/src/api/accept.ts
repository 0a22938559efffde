import type { Request, Response } from 'express';
import type { Counter } from 'prom-client';
import type { z } from 'zod';
import type { OutgoingEvent } from '@mds/kafka';
import { fieldErrors, Problem } from '@mds/service-kit';
import { inHop } from '@mds/telemetry';
import {
  acceptRequest,
  type AcceptDeps as AcceptUseCaseDeps,
  type AcceptOutcome,
} from '../application/accept.js';
import type { Acceptance } from '../application/events.js';
import { callerOf } from './middleware.js';
import { IDEMPOTENCY_KEY_PATTERN } from './schemas.js';

export interface AcceptDeps extends AcceptUseCaseDeps {
  accepted: Counter<'endpoint'>;
  refused: Counter<'endpoint' | 'code'>;
}

export interface AcceptedRequest<S extends z.ZodType> {
  path: string;
  schema: S;
  toEvent: (a: Acceptance, body: z.infer<S>) => OutgoingEvent;
  respond: (requestId: string) => object;
}

/** A refusal of the accept use case as its HTTP problem. */
export function problemOf(refusal: Extract<AcceptOutcome, { kind: 'refused' }>): Problem {
  switch (refusal.reason) {
    case 'idempotency_key_reused':
      return new Problem(
        422,
        'idempotency_key_reused',
        'Idempotency-Key reused',
        'This Idempotency-Key was used with a different request.',
      );
    case 'idempotency_request_in_progress':
      return new Problem(
        409,
        'idempotency_request_in_progress',
        'Request in progress',
        'A request with this Idempotency-Key is still being handled; retry shortly.',
        undefined,
        { 'Retry-After': '1' },
      );
    case 'personal_data_keys_unavailable':
      return new Problem(
        503,
        'personal_data_keys_unavailable',
        'Service unavailable',
        'The request cannot be stored safely right now; retry shortly.',
        undefined,
        { 'Retry-After': '1' },
      );
    case 'broker_unavailable':
      return new Problem(
        503,
        'broker_unavailable',
        'Service unavailable',
        refusal.written === 'no'
          ? 'The request was not accepted: the event log is unavailable. Retry shortly.'
          : 'The event log did not confirm the request in time; it may or may not have been accepted. Retry with the same Idempotency-Key to be sure it is accepted once.',
        undefined,
        { 'Retry-After': '5' },
      );
  }
}

/** Failures of the system's own (not the request's): counted as refusals by code. */
const COUNTED = new Set(['personal_data_keys_unavailable', 'broker_unavailable']);

/**
 * HTTP around the accept use case: validates the body and the Idempotency-Key's form, runs the use case,
 * and says its outcome as 202, a replayed answer, or a problem.
 */
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
    const idempotencyKey = req.header('idempotency-key');
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY_PATTERN.test(idempotencyKey)) {
      throw new Problem(
        400,
        'invalid_idempotency_key',
        'Invalid Idempotency-Key',
        'Idempotency-Key is 1 to 255 visible ASCII characters.',
      );
    }
    const outcome = await acceptRequest(deps, {
      operation: `POST ${request.path}`,
      caller: callerOf(res),
      idempotencyKey,
      body: parsed.data,
      toEvent: request.toEvent,
      respond: request.respond,
    });
    switch (outcome.kind) {
      case 'replayed':
        res.setHeader('Idempotent-Replayed', 'true');
        res.status(outcome.statusCode).json(outcome.response);
        return;
      case 'refused':
        if (COUNTED.has(outcome.reason)) deps.refused.inc({ endpoint: request.path, code: outcome.reason });
        throw problemOf(outcome);
      case 'accepted':
        deps.accepted.inc({ endpoint: request.path });
        res.status(202).json(outcome.body);
    }
  };
  // The first hop of the request's trace: the event it writes carries this span's trace context.
  return (req: Request, res: Response) =>
    inHop('gateway accept', undefined, () => handle(req, res), {
      attributes: { 'mds.endpoint': request.path },
    });
}
