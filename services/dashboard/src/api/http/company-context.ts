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
    messenger: 'telegram' | 'max';
    name: string;
    username: string;
    default: boolean;
    registered_at: string;
  }[];
}

export const API_KEY = /^mds_([a-z0-9]{12})_[A-Za-z0-9_-]{43}$/;

const ID = /^[A-Za-z0-9_-]{1,64}$/;
export function idParam(req: Request, name: string, code: string): string {
  const value = String(req.params[name]);
  if (!ID.test(value)) throw new Problem(404, code, 'Not found', `No ${name} ${value} in this company.`);
  return value;
}

/** What every company route needs: the company's view, its paths, the audit trail, the gateway with its key. */
export function companyContext(d: ApiDeps) {
  const company = (m: Member) => d.registry(m).call<CompanyView>('GET', `/companies/${m.company_id}`);
  const path = (m: Member, rest = '') => `/companies/${m.company_id}${rest}`;
  const audit = (m: Member, action: string, target = '', detail?: unknown) =>
    d.access.audit({ companyId: m.company_id, memberId: m.member_id, action, target, detail });

  /** The key, if it is one of the company's own and not revoked: the dashboard never sends as another company. */
  async function ownKey(m: Member, key: string): Promise<string> {
    const keyId = API_KEY.exec(key)![1]!;
    const own = (await company(m)).api_keys.find((k) => k.key_id === keyId && !k.revoked_at);
    if (!own) {
      throw new Problem(
        422,
        'api_key_not_usable',
        'Not a key of this company',
        'Use a valid, unrevoked API key of your company.',
        [{ pointer: '#/api_key', detail: 'not a valid API key of this company', code: 'invalid_value' }],
      );
    }
    return key;
  }

  /** A public API call with the member's key: the gateway's answer, status and body, as it gave it. */
  async function throughGateway(
    m: Member,
    apiKeyValue: string,
    route: string,
    body: unknown,
    idempotencyKey?: string,
  ) {
    const answer = await d.gateway.raw<Record<string, unknown>>('POST', `/api/v1${route}`, body, {
      'x-api-key': await ownKey(m, apiKeyValue),
      ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}),
    });
    // The dashboard's own 401 means "sign in again": a refused key is a refused field, not a lost session.
    if (answer.status === 401) {
      throw new Problem(
        422,
        'api_key_rejected',
        'API key refused',
        'The public API refused this key (revoked a moment ago?).',
        [{ pointer: '#/api_key', detail: 'refused by the public API', code: 'invalid_value' }],
      );
    }
    return answer;
  }
  return { company, path, audit, throughGateway };
}

export type CompanyContext = ReturnType<typeof companyContext>;
