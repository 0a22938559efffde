import { createHash } from 'node:crypto';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { Counter, type Registry } from 'prom-client';
import type { z } from 'zod';
import { PublishTimeoutError, type EventPublisher, type OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { fieldErrors, Problem } from '@mds/service-kit';
import {
  clientCheckRequested,
  messageAccepted,
  phoneChangeRequested,
  type Acceptance,
} from '../application/accept.js';
import { RegistryUnavailableError, type ApiKeyResolver, type Caller } from '../adapters/api-keys.js';
import type { Holder, IdempotencyStore } from '../adapters/idempotency.js';
import type { Limit, RateLimiter } from '../adapters/rate-limiter.js';
import type { EventState } from '@mds/message-state';
import { eventStateBody } from './event-state.js';
import { changePhoneRequestSchema, clientCheckRequestSchema, sendRequestSchema } from './schemas.js';

export const UNAUTHORIZED_DETAIL = 'Invalid or missing API key.';

export interface RateLimits {
  sendPerKey: number;
  sendPerCompany: number;
  otherPerKey: number;
  otherPerCompany: number;
  readPerKey: number;
  readPerCompany: number;
  burstSeconds: number;
}

export interface ApiDeps {
  logger: Logger;
  registry: Registry;
  publisher: EventPublisher;
  apiKeys: ApiKeyResolver;
  limiter: RateLimiter;
  idempotency: IdempotencyStore;
  /** The read model: a message's or request's state, as the company that made it sees it. */
  states: { read(eventId: string, companyId: string): Promise<EventState | undefined> };
  limits: RateLimits;
  publishTimeoutMs: number;
  maxBodyBytes: number;
  now: () => Date;
  newId: () => string;
}

type Category = 'send' | 'other' | 'read';

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * POST /api/v1/send, /change_phone, /client/check: authenticate, limit, validate, record as an event, 202.
 * GET /api/v1/events/{event_id}: the state of what an event_id names, from the read model.
 */
export function apiRouter(deps: ApiDeps): Router {
  const router = express.Router();
  const accepted = new Counter({
    name: 'mds_gateway_accepted_total',
    help: 'Requests accepted (their event is in Kafka)',
    labelNames: ['endpoint'],
    registers: [deps.registry],
  });
  const refused = new Counter({
    name: 'mds_gateway_refused_total',
    help: 'Requests refused, by problem code',
    labelNames: ['endpoint', 'code'],
    registers: [deps.registry],
  });

  const caller = (res: Response) => res.locals.caller as Caller;

  const authenticate = async (req: Request, res: Response, next: NextFunction) => {
    const apiKey = req.header('x-api-key');
    if (!apiKey) return unauthorized(res);
    try {
      const resolution = await deps.apiKeys.resolve(apiKey);
      if (!resolution.ok) return unauthorized(res);
      res.locals.caller = resolution.caller;
      next();
    } catch (error) {
      if (!(error instanceof RegistryUnavailableError)) throw error;
      deps.logger.error({ err: error }, 'cannot check API keys');
      throw new Problem(
        503,
        'auth_unavailable',
        'Service unavailable',
        'API keys cannot be checked right now; retry shortly.',
        undefined,
        { 'Retry-After': '1' },
      );
    }
  };

  const limit = (category: Category) => async (_req: Request, res: Response, next: NextFunction) => {
    const { companyId, keyId } = caller(res);
    const burst = deps.limits.burstSeconds;
    const { perKey, perCompany } = {
      send: { perKey: deps.limits.sendPerKey, perCompany: deps.limits.sendPerCompany },
      other: { perKey: deps.limits.otherPerKey, perCompany: deps.limits.otherPerCompany },
      read: { perKey: deps.limits.readPerKey, perCompany: deps.limits.readPerCompany },
    }[category];
    const limits: Limit[] = [
      { bucket: `key:${keyId}:${category}`, rate: perKey, capacity: Math.max(1, perKey * burst) },
      {
        bucket: `company:${companyId}:${category}`,
        rate: perCompany,
        capacity: Math.max(1, perCompany * burst),
      },
    ];
    const policy = `"${category}-key";q=${limits[0]!.capacity};w=${burst}, "${category}-company";q=${limits[1]!.capacity};w=${burst}`;
    res.setHeader('RateLimit-Policy', policy);
    const verdict = await deps.limiter.check(limits);
    if (verdict.allowed) {
      res.setHeader('RateLimit', `"${category}";r=${verdict.remaining};t=${burst}`);
      return next();
    }
    const which = verdict.limit.bucket.startsWith('key:') ? 'API key' : 'company';
    throw new Problem(
      429,
      'rate_limited',
      'Too many requests',
      `The ${which} sends more than ${verdict.limit.rate} requests per second (bursts up to ${verdict.limit.capacity}). Retry after ${verdict.retryAfterSeconds} s.`,
      undefined,
      {
        'Retry-After': String(verdict.retryAfterSeconds),
        RateLimit: `"${category}";r=0;t=${verdict.retryAfterSeconds}`,
      },
      { violated_policy: which === 'API key' ? `${category}-key` : `${category}-company` },
    );
  };

  const requireJson = (req: Request, _res: Response, next: NextFunction) => {
    if (!req.is('application/json')) {
      throw new Problem(
        415,
        'unsupported_media_type',
        'Unsupported media type',
        'Send the body as JSON with "Content-Type: application/json".',
        undefined,
        {
          'Accept-Post': 'application/json',
        },
      );
    }
    next();
  };

  const json = express.json({ limit: deps.maxBodyBytes, strict: true, type: 'application/json' });

  function endpoint<S extends z.ZodType>(
    path: string,
    category: Category,
    schema: S,
    toEvent: (a: Acceptance, body: z.infer<S>) => OutgoingEvent,
    respond: (requestId: string) => object,
  ) {
    router.post(
      path,
      authenticate,
      limit(category),
      requireJson,
      json,
      async (req: Request, res: Response) => {
        const parsed = schema.safeParse(req.body);
        if (!parsed.success) {
          refused.inc({ endpoint: path, code: 'validation_failed' });
          throw new Problem(
            422,
            'validation_failed',
            'Validation failed',
            'The request body is not valid; see errors.',
            fieldErrors(parsed.error),
          );
        }
        const { companyId, keyId } = caller(res);
        const idempotencyKey = req.header('idempotency-key');
        if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
          throw new Problem(
            400,
            'invalid_idempotency_key',
            'Invalid Idempotency-Key',
            'Idempotency-Key is 1 to 255 visible ASCII characters.',
          );
        }
        let requestId = deps.newId();
        let claimed: Holder | undefined;
        if (idempotencyKey) {
          const fingerprint = createHash('sha256')
            .update(`POST ${path}\n${JSON.stringify(parsed.data)}`)
            .digest('hex');
          const claim = await deps.idempotency.claim(keyId, idempotencyKey, fingerprint, requestId);
          if (claim.kind === 'replay') {
            res.setHeader('Idempotent-Replayed', 'true');
            res.status(claim.statusCode).json(claim.response);
            return;
          }
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
          requestId = claim.eventId;
          claimed = claim;
        }
        const event = toEvent(
          { requestId, companyId, apiKeyId: keyId, idempotencyKey: idempotencyKey ?? '', at: deps.now() },
          parsed.data,
        );
        try {
          await deps.publisher.publish([event], { timeoutMs: deps.publishTimeoutMs });
        } catch (error) {
          const written = error instanceof PublishTimeoutError ? error.written : 'unknown';
          if (idempotencyKey && claimed) {
            await deps.idempotency.release(keyId, idempotencyKey, written, claimed).catch((e: unknown) => {
              // The 503 stands; the claim lapses after its lock time.
              deps.logger.error({ err: e }, 'could not release an Idempotency-Key');
            });
          }
          deps.logger.error({ err: error, requestId, written }, 'Kafka did not take the event');
          refused.inc({ endpoint: path, code: 'broker_unavailable' });
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
        const body = respond(requestId);
        if (idempotencyKey && claimed) {
          // The event is stored, so the answer is 202 whatever happens to this bookkeeping; a retry then
          // finds the claim pending (409) until its lock lapses, and is taken over with the same event_id.
          await deps.idempotency.complete(keyId, idempotencyKey, claimed, 202, body).catch((e: unknown) => {
            deps.logger.error({ err: e, requestId }, 'could not store the response of an Idempotency-Key');
          });
        }
        accepted.inc({ endpoint: path });
        res.status(202).json(body);
      },
    );
  }

  endpoint('/send', 'send', sendRequestSchema, messageAccepted, (id) => ({
    status: 'accepted',
    event_id: id,
    data: { state: 'new' },
  }));
  endpoint('/change_phone', 'other', changePhoneRequestSchema, phoneChangeRequested, (id) => ({
    status: 'accepted',
    event_id: id,
  }));
  endpoint('/client/check', 'other', clientCheckRequestSchema, clientCheckRequested, (id) => ({
    status: 'accepted',
    event_id: id,
  }));
  // The same answer for an id that does not exist and one of another company: existence never leaks.
  router.get('/events/:eventId', authenticate, limit('read'), async (req: Request, res: Response) => {
    const state = await deps.states.read(String(req.params.eventId), caller(res).companyId);
    if (!state) {
      throw new Problem(
        404,
        'not_found',
        'Not found',
        'No message or request of your company has this event_id (an id is readable a moment after its 202).',
      );
    }
    res.json(eventStateBody(state));
  });
  return router;
}

/** The spec's 401: JSON with a `detail` string. */
export function unauthorized(res: Response): void {
  res
    .status(401)
    .setHeader('WWW-Authenticate', 'ApiKey header="X-API-Key"')
    .json({ detail: UNAUTHORIZED_DETAIL });
}
