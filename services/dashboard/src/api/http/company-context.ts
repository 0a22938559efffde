import type { MessengerName } from '@mds/contracts';
import type { Request } from 'express';
import { Problem } from '@mds/service-kit';
import type { Member } from '../../application/access.js';
import type { WebhookView } from '../../domain/views.js';
import type { ApiDeps } from './deps.js';

/** What client-registry's admin API says of a company (no secret in it). */
export interface CompanyView {
  company_id: string;
  name: string;
  api_keys: { key_id: string; prefix: string; label: string; issued_at: string; revoked_at: string | null }[];
  webhook: WebhookView | null;
  bots: {
    bot_id: string;
    messenger: MessengerName;
    name: string;
    username: string;
    default: boolean;
    registered_at: string;
  }[];
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;
export function idParam(req: Request, name: string, code: string): string {
  const value = String(req.params[name]);
  if (!ID.test(value)) throw new Problem(404, code, 'Not found', `No ${name} ${value} in this company.`);
  return value;
}

/** What every company route needs: the company's view, its paths, the audit trail, the gateway as the member. */
export function companyContext(d: ApiDeps) {
  const company = (m: Member) => d.registry(m).call<CompanyView>('GET', `/companies/${m.company_id}`);
  const path = (m: Member, rest = '') => `/companies/${m.company_id}${rest}`;
  const audit = (m: Member, action: string, target = '', detail?: unknown) =>
    d.access.audit({ companyId: m.company_id, memberId: m.member_id, action, target, detail });

  /**
   * A public API call as the member (the dashboard's assertion, no API key): the gateway's answer, status and
   * body, as it gave it. The member's role was checked by the route; the gateway applies the company's rules.
   */
  async function throughGateway(m: Member, route: string, body: unknown, idempotencyKey?: string) {
    const answer = await d
      .gateway(m)
      .raw<Record<string, unknown>>(
        'POST',
        route,
        body,
        idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
      );
    // The dashboard's own 401 means "sign in again": the gateway refusing the dashboard is a setup fault.
    if (answer.status === 401 || answer.status === 403) {
      throw new Problem(
        502,
        'gateway_refused_dashboard',
        'The public API refused the dashboard',
        "The gateway does not accept the dashboard's identity: its DASHBOARD_PUBLIC_KEYS must hold the dashboard's public key (docs/security.md).",
      );
    }
    return answer;
  }
  return { company, path, audit, throughGateway };
}

export type CompanyContext = ReturnType<typeof companyContext>;
