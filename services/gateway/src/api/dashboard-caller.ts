import type { KeyObject } from 'node:crypto';
import type { Request } from 'express';
import { API_KEY_SCOPES } from '@mds/contracts';
import { verifyCompanyAssertion } from '@mds/service-kit';
import type { Caller } from '@mds/registry-client';

/** The audience the dashboard signs its assertions to the gateway for (client-registry's is its own name). */
export const GATEWAY_AUDIENCE = 'gateway';

/** The key id a request made by a dashboard member is recorded under: `dashboard:<member_id>`. */
export const DASHBOARD_KEY_ID_PREFIX = 'dashboard:';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The dashboard acting for a signed-in member (docs/security.md): a request without X-API-Key carrying
 * `Authorization: Bearer <assertion>`, the dashboard's short-lived Ed25519 assertion for one company and this
 * service, verified with DASHBOARD_PUBLIC_KEYS. It is then a request of that company like any key's: the same
 * validation, idempotency, the company's rate limits and events, with `dashboard:<member_id>` as its key id (the
 * member's own buckets and Idempotency-Keys, and the events say who acted). The dashboard checks the member's
 * role before it signs; the gateway trusts what it signed and nothing else.
 */
export interface DashboardCallers {
  /** True when the request presents a dashboard assertion and no API key (an API key always wins). */
  presents(req: Request): boolean;
  /** The caller the assertion names, or undefined when it is not one the gateway accepts. */
  callerOf(req: Request): Promise<Caller | undefined>;
}

const bearer = (req: Request) => /^Bearer (\S+)$/.exec(req.header('authorization') ?? '')?.[1];

/** Without keys (DASHBOARD_PUBLIC_KEYS unset) no assertion is accepted: such requests are 401 like a bad key. */
export function dashboardCallers(keys: readonly KeyObject[]): DashboardCallers {
  return {
    presents: (req) => req.header('x-api-key') === undefined && bearer(req) !== undefined,
    async callerOf(req) {
      const token = bearer(req);
      if (!token || keys.length === 0) return undefined;
      const verdict = await verifyCompanyAssertion(token, keys, GATEWAY_AUDIENCE);
      if (!verdict.ok) return undefined;
      const { companyId, memberId } = verdict.actor;
      if (!UUID.test(companyId) || !UUID.test(memberId)) return undefined;
      return { companyId, keyId: `${DASHBOARD_KEY_ID_PREFIX}${memberId}`, scopes: API_KEY_SCOPES };
    },
  };
}
