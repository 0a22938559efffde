import type { Request, Response } from 'express';
import type { z } from 'zod';
import { fieldErrors, Problem, type FieldError } from '@mds/service-kit';
import { inHop } from '@mds/telemetry';
import { acceptBatch, type BatchItemOutcome } from '../application/accept.js';
import { messageAccepted } from '../application/events.js';
import type { RateLimiter, Verdict } from '../application/ports.js';
import { problemOf, type AcceptDeps } from './accept.js';
import { bucketsOf, callerOf, rateLimited, type RateLimits } from './middleware.js';
import { sendBatchEnvelopeSchema, sendBatchItemSchema, type sendRequestSchema } from './schemas.js';

export interface SendBatchDeps extends AcceptDeps {
  limiter: RateLimiter;
  limits: RateLimits;
}

const ENDPOINT = '/send/batch';

type SendRequest = z.infer<typeof sendRequestSchema>;

type Result = { status: 'accepted'; event_id: string } | { status: 'rejected'; errors: FieldError[] };

const rejected = (index: number, code: string, detail: string): Result => ({
  status: 'rejected',
  errors: [{ pointer: `#/messages/${index}`, detail, code }],
});

const ITEM_REFUSALS = {
  idempotency_key_reused: 'This idempotency_key was used with a different request.',
  idempotency_request_in_progress:
    'A request with this idempotency_key is still being handled; retry this message shortly.',
} as const;

/**
 * POST /api/v1/send/batch: up to 500 send bodies, each accepted or refused on its own as a single send would
 * be (its validation, its idempotency_key, a token of the key's and the company's send limits), the accepted
 * ones recorded by one publish before the 202. Every message costs a token, valid or not, as a single send does;
 * the messages beyond the tokens are refused `rate_limited`, and a batch of which none got one is a 429.
 */
export function sendBatchHandler(deps: SendBatchDeps) {
  const buckets = bucketsOf(deps.limits, 'send');
  const handle = async (req: Request, res: Response) => {
    if (req.header('idempotency-key') !== undefined) {
      throw new Problem(
        400,
        'idempotency_key_not_supported',
        'Idempotency-Key not supported here',
        'A batch takes no Idempotency-Key header: give each message its own `idempotency_key`.',
      );
    }
    const envelope = sendBatchEnvelopeSchema.safeParse(req.body);
    if (!envelope.success) {
      deps.refused.inc({ endpoint: ENDPOINT, code: 'validation_failed' });
      throw new Problem(
        422,
        'validation_failed',
        'Validation failed',
        'The request body is not valid; see errors.',
        fieldErrors(envelope.error),
      );
    }
    const { messages } = envelope.data;
    const caller = callerOf(res);

    // One check per message, all at once: the limiter leases the tokens of concurrent requests together.
    res.setHeader('RateLimit-Policy', buckets.policy);
    const verdicts = await Promise.all(messages.map(() => deps.limiter.check(buckets.limits(caller))));
    const allowed = verdicts.filter((v) => v.allowed);
    const refusal = verdicts.find((v): v is Extract<Verdict, { allowed: false }> => !v.allowed);
    if (allowed.length === 0) throw rateLimited('send', refusal!);
    res.setHeader('RateLimit', `"send";r=${Math.min(...allowed.map((v) => v.remaining))};t=${buckets.burst}`);
    const tooMany = refusal && rateLimited('send', refusal);

    // Tokens are alike: the first messages get them.
    const results = new Array<Result>(messages.length);
    const valid: { index: number; idempotencyKey: string | undefined; body: SendRequest }[] = [];
    messages.forEach((item, index) => {
      if (index >= allowed.length) {
        results[index] = rejected(index, 'rate_limited', tooMany!.message);
        return;
      }
      const parsed = sendBatchItemSchema.safeParse(item);
      if (!parsed.success) {
        deps.refused.inc({ endpoint: ENDPOINT, code: 'validation_failed' });
        results[index] = {
          status: 'rejected',
          errors: fieldErrors(parsed.error).map((e) => ({
            ...e,
            // "#/text" of the message -> "#/messages/3/text"; its root "#/" -> "#/messages/3".
            pointer: `#/messages/${index}${e.pointer.slice(1)}`.replace(/\/$/, ''),
          })),
        };
        return;
      }
      const { idempotency_key: idempotencyKey, ...body } = parsed.data;
      valid.push({ index, idempotencyKey, body });
    });

    const outcome = await acceptBatch(deps, {
      // As a single send's: an idempotency_key names the same message in a batch or alone.
      operation: 'POST /send',
      caller,
      items: valid,
      toEvent: messageAccepted,
      respond: (id) => ({ status: 'accepted', event_id: id, data: { state: 'new' } }),
    });
    if (outcome.kind === 'refused') {
      deps.refused.inc({ endpoint: ENDPOINT, code: outcome.reason });
      throw problemOf(outcome);
    }
    outcome.items.forEach((item: BatchItemOutcome, i) => {
      const { index } = valid[i]!;
      results[index] =
        item.kind === 'accepted'
          ? { status: 'accepted', event_id: item.requestId }
          : rejected(index, item.reason, ITEM_REFUSALS[item.reason]);
    });
    const accepted = results.filter((r) => r.status === 'accepted').length;
    if (accepted > 0) deps.accepted.inc({ endpoint: ENDPOINT }, accepted);
    res.status(202).json({ results });
  };
  return (req: Request, res: Response) =>
    inHop('gateway accept', undefined, () => handle(req, res), {
      attributes: { 'mds.endpoint': ENDPOINT },
    });
}
