import type { PersonKeyPort } from '@mds/personal-data';
import express, { type Request, type Response, type Router } from 'express';
import { Counter, type Registry } from 'prom-client';
import type { ZodType } from 'zod';
import type { Logger } from '@mds/logging';
import type { EventState } from '@mds/message-state';
import { jsonBody, Problem } from '@mds/service-kit';
import { clientCheckRequested, messageAccepted, phoneChangeRequested } from '../application/events.js';
import type { ApiKeyScope } from '@mds/contracts';
import type { ApiKeyResolver } from '@mds/registry-client';
import type { EventLog, IdempotencyStore, RateLimiter } from '../application/ports.js';
import type { AddressLimiter } from '../adapters/address-limiter.js';
import { acceptHandler, type AcceptDeps, type AcceptedRequest } from './accept.js';
import type { DashboardCallers } from './dashboard-caller.js';
import { eventStateBody } from './event-state.js';
import { cancelHandler } from './cancel.js';
import {
  authenticate,
  callerOf,
  rateLimit,
  requireJson,
  requireScope,
  type Category,
  type RateLimits,
} from './middleware.js';
import { changePhoneRequestSchema, clientCheckRequestSchema, sendRequestSchema } from './schemas.js';
import { sendBatchHandler } from './send-batch.js';
import { servedRequests, type RecordServed } from './served-requests.js';

import type { Fingerprinter } from '../application/fingerprint.js';

export { UNAUTHORIZED_DETAIL, unauthorized, type RateLimits } from './middleware.js';

export interface ApiDeps {
  logger: Logger;
  registry: Registry;
  publisher: EventLog;
  apiKeys: ApiKeyResolver;
  /** The dashboard acting for a member, with its assertion instead of an API key. */
  dashboard: DashboardCallers;
  /** Requests without a good key, per client address, before any lookup. */
  addresses: AddressLimiter;
  /** Person keys that seal the numbers and texts of accepted requests. */
  personKeys: PersonKeyPort;
  limiter: RateLimiter;
  idempotency: IdempotencyStore;
  /** The read model: a message's or request's state, as the company that made it sees it. */
  states: { read(eventId: string, companyId: string): Promise<EventState | undefined> };
  limits: RateLimits;
  publishTimeoutMs: number;
  /** Keyed fingerprints of requests, for their Idempotency-Keys (IDEMPOTENCY_FINGERPRINT_KEYS). */
  fingerprint: Fingerprinter;
  maxBodyBytes: number;
  /** Largest body of POST /api/v1/send/batch (up to 500 send bodies). */
  maxBatchBodyBytes: number;
  /** The per-key request log: told of every authenticated request once answered (never waited for). */
  recordServed?: RecordServed;
  now: () => Date;
  newId: () => string;
}

const accepted = (id: string) => ({ status: 'accepted', event_id: id });

/**
 * POST /api/v1/send, /change_phone, /client/check: authenticate, limit, validate, record as an event, 202.
 * GET /api/v1/events/{event_id}: the state of what an event_id names, from the read model.
 */
export function apiRouter(deps: ApiDeps): Router {
  const router = express.Router();
  const acceptDeps: AcceptDeps = {
    ...deps,
    accepted: new Counter({
      name: 'mds_gateway_accepted_total',
      help: 'Requests accepted (their event is in Kafka)',
      labelNames: ['endpoint'],
      registers: [deps.registry],
    }),
    refused: new Counter({
      name: 'mds_gateway_refused_total',
      help: 'Requests refused, by problem code',
      labelNames: ['endpoint', 'code'],
      registers: [deps.registry],
    }),
  };
  const authenticated = authenticate(deps.apiKeys, deps.addresses, deps.logger, deps.dashboard);
  const limited = (category: Category) => rateLimit(deps.limiter, deps.limits, category);
  const json = jsonBody({ limit: deps.maxBodyBytes });
  const recordServed = deps.recordServed ?? (() => undefined);
  const post = <S extends ZodType>(category: Category, scope: ApiKeyScope, request: AcceptedRequest<S>) =>
    router.post(
      request.path,
      // "/client/check" -> "client_check"
      servedRequests(recordServed, request.path.slice(1).replace('/', '_')),
      authenticated,
      requireScope(scope),
      limited(category),
      requireJson,
      json,
      acceptHandler(acceptDeps, request),
    );

  post('send', 'send', {
    path: '/send',
    schema: sendRequestSchema,
    toEvent: messageAccepted,
    respond: (id) => ({ ...accepted(id), data: { state: 'new' } }),
  });
  post('other', 'change_phone', {
    path: '/change_phone',
    schema: changePhoneRequestSchema,
    toEvent: phoneChangeRequested,
    respond: accepted,
  });
  post('other', 'check', {
    path: '/client/check',
    schema: clientCheckRequestSchema,
    toEvent: clientCheckRequested,
    respond: accepted,
  });
  router.post(
    '/send/batch',
    servedRequests(recordServed, 'send_batch'),
    authenticated,
    requireScope('send'),
    requireJson,
    jsonBody({ limit: deps.maxBatchBodyBytes }),
    sendBatchHandler({ ...acceptDeps, limiter: deps.limiter, limits: deps.limits }),
  );
  // Same key, scope and rate as a send; no Idempotency-Key is needed (a cancel may be repeated).
  router.post(
    '/cancel',
    servedRequests(recordServed, 'cancel'),
    authenticated,
    requireScope('send'),
    limited('send'),
    requireJson,
    json,
    cancelHandler(deps),
  );
  // Another method on a path of the API: 405 with the methods it has (RFC 9110), not the 404 of an unknown path.
  for (const [path, allowed] of [
    ['/send', 'POST'],
    ['/send/batch', 'POST'],
    ['/change_phone', 'POST'],
    ['/client/check', 'POST'],
    ['/cancel', 'POST'],
    ['/events/:event_id', 'GET, HEAD'],
  ] as const) {
    router.all(path, (req: Request, res: Response, next) => {
      if (allowed.split(', ').includes(req.method)) return next();
      throw new Problem(
        405,
        'method_not_allowed',
        'Method not allowed',
        `${req.method} is not allowed here; use ${allowed}.`,
        undefined,
        { Allow: allowed },
      );
    });
  }
  // The same answer for an id that does not exist and one of another company: existence never leaks.
  router.get(
    '/events/:event_id',
    servedRequests(recordServed, 'read_event'),
    authenticated,
    requireScope('read'),
    limited('read'),
    async (req: Request, res: Response) => {
      const state = await deps.states.read(String(req.params.event_id), callerOf(res).companyId);
      if (!state) {
        throw new Problem(
          404,
          'not_found',
          'Not found',
          'No message or request of your company has this event_id (an id is readable a moment after its 202).',
        );
      }
      res.json(eventStateBody(state));
    },
  );
  return router;
}
