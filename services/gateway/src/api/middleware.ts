import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '@mds/logging';
import { Problem } from '@mds/service-kit';
import type { ApiKeyScope } from '@mds/contracts';
import type { AddressLimiter } from '../adapters/address-limiter.js';
import { RegistryError, type ApiKeyResolver, type Caller, type KeyStanding } from '@mds/registry-client';
import type { Limit, RateLimiter, Verdict } from '../application/ports.js';
import type { DashboardCallers } from './dashboard-caller.js';

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

export type Category = 'send' | 'other' | 'read';

/** The company and key an authenticated request acts for. */
export const callerOf = (res: Response) => res.locals.caller as Caller;

/** The spec's 401: JSON with a `detail` string. */
export function unauthorized(res: Response): void {
  res
    .status(401)
    .setHeader('WWW-Authenticate', 'ApiKey header="X-API-Key"')
    .json({ detail: UNAUTHORIZED_DETAIL });
}

/** 429 `auth_rate_limited`: the client address spent its allowance of requests without a good key. */
function authRateLimited(retryAfterSeconds: number): Problem {
  return new Problem(
    429,
    'auth_rate_limited',
    'Too many requests',
    `Too many requests without a valid API key from this address. Retry after ${retryAfterSeconds} s.`,
    undefined,
    { 'Retry-After': String(retryAfterSeconds) },
  );
}

const addressOf = (req: Request) => req.ip ?? req.socket.remoteAddress ?? 'unknown';

/**
 * Resolves X-API-Key to its company and scopes (res.locals.caller), or answers 401; 503 while keys cannot be
 * checked. What the gateway's memory says of the key decides what the client address is charged:
 * - a key known good passes from memory (refreshed ahead of its expiry in the background while in use);
 * - a key whose id is a company's (listed by the registry, or seen good here) is looked up and never charged:
 *   many companies behind one address (a NAT, an untrusted proxy) do not share one allowance;
 * - a missing or malformed key, a key refused a moment ago, or another secret under a known key's id costs a
 *   token of the address's failed-authentication bucket (429 `auth_rate_limited` when it is empty) and is 401,
 *   asking no one;
 * - any other key (an id no one knows: a guess) takes a token before its lookup, given back when the key
 *   proves good: a flood of random keys from one address costs the registry at most that bucket's rate.
 * The address is the socket's, or X-Forwarded-For's as far as the `trust proxy` setting (TRUST_PROXY) trusts it.
 * Without X-API-Key, the dashboard's assertion for a member (dashboard-caller.ts) may stand in for a key; one
 * the gateway does not accept is charged and refused like a bad key.
 */
export function authenticate(
  apiKeys: ApiKeyResolver,
  addresses: AddressLimiter,
  logger: Logger,
  dashboard?: DashboardCallers,
) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (dashboard?.presents(req)) {
      const caller = await dashboard.callerOf(req);
      if (caller) {
        res.locals.caller = caller;
        return next();
      }
      const verdict = addresses.take(addressOf(req));
      if (!verdict.allowed) throw authRateLimited(verdict.retryAfterSeconds);
      return unauthorized(res);
    }
    const apiKey = req.header('x-api-key');
    const memory: KeyStanding = apiKey ? apiKeys.standing(apiKey) : { standing: 'refused' };
    if (memory.standing === 'good') {
      res.locals.caller = memory.caller;
      return next();
    }
    const address = addressOf(req);
    const charged = memory.standing !== 'known';
    if (charged) {
      const verdict = addresses.take(address);
      if (!verdict.allowed) throw authRateLimited(verdict.retryAfterSeconds);
    }
    if (!apiKey || memory.standing === 'refused') return unauthorized(res);
    try {
      const resolution = await apiKeys.resolve(apiKey);
      if (!resolution.ok) return unauthorized(res);
      if (charged) addresses.refund(address);
      res.locals.caller = resolution.caller;
      next();
    } catch (error) {
      if (!(error instanceof RegistryError)) throw error;
      if (error.kind === 'busy') {
        throw new Problem(
          503,
          'auth_busy',
          'Service unavailable',
          'Too many API keys are being checked right now; retry shortly.',
          undefined,
          { 'Retry-After': '1' },
        );
      }
      logger.error({ err: error }, 'cannot check API keys');
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
}

/** 403 `insufficient_scope` unless the caller's key has `scope`. */
export function requireScope(scope: ApiKeyScope) {
  return (_req: Request, res: Response, next: NextFunction) => {
    if (!callerOf(res).scopes.includes(scope)) {
      throw new Problem(
        403,
        'insufficient_scope',
        'Forbidden',
        `This API key lacks the "${scope}" scope; issue a key with it (see the API docs on key scopes).`,
        undefined,
        undefined,
        { required_scope: scope },
      );
    }
    next();
  };
}

/** The key's and the company's token buckets of a category, as the RateLimit-Policy header names them. */
export function bucketsOf(rates: RateLimits, category: Category) {
  const burst = rates.burstSeconds;
  const { perKey, perCompany } = {
    send: { perKey: rates.sendPerKey, perCompany: rates.sendPerCompany },
    other: { perKey: rates.otherPerKey, perCompany: rates.otherPerCompany },
    read: { perKey: rates.readPerKey, perCompany: rates.readPerCompany },
  }[category];
  const keyCapacity = Math.max(1, perKey * burst);
  const companyCapacity = Math.max(1, perCompany * burst);
  return {
    burst,
    policy: `"${category}-key";q=${keyCapacity};w=${burst}, "${category}-company";q=${companyCapacity};w=${burst}`,
    limits: ({ companyId, keyId }: Caller): Limit[] => [
      { bucket: `key:${keyId}:${category}`, rate: perKey, capacity: keyCapacity },
      { bucket: `company:${companyId}:${category}`, rate: perCompany, capacity: companyCapacity },
    ],
  };
}

/** 429 `rate_limited`: the bucket `verdict` names is empty. */
export function rateLimited(category: Category, verdict: Extract<Verdict, { allowed: false }>): Problem {
  const which = verdict.limit.bucket.startsWith('key:') ? 'API key' : 'company';
  return new Problem(
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
}

/** The key's and the company's token buckets of a category (IETF RateLimit headers); 429 when either is empty. */
export function rateLimit(limiter: RateLimiter, rates: RateLimits, category: Category) {
  const { burst, policy, limits } = bucketsOf(rates, category);
  return async (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader('RateLimit-Policy', policy);
    const verdict = await limiter.check(limits(callerOf(res)));
    if (verdict.allowed) {
      res.setHeader('RateLimit', `"${category}";r=${verdict.remaining};t=${burst}`);
      return next();
    }
    throw rateLimited(category, verdict);
  };
}

export function requireJson(req: Request, _res: Response, next: NextFunction): void {
  if (!req.is('application/json')) {
    throw new Problem(
      415,
      'unsupported_media_type',
      'Unsupported media type',
      'Send the body as JSON with "Content-Type: application/json".',
      undefined,
      { 'Accept-Post': 'application/json' },
    );
  }
  next();
}
