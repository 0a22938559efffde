import { Problem } from '@mds/service-kit';
import { describe, expect, it } from 'vitest';
import type { JsonClient } from '../../adapters/services/http-json.js';
import type { Member } from '../../application/access.js';
import { companyContext } from './company-context.js';
import type { ApiDeps } from './deps.js';

const member = { company_id: 'c1', member_id: 'm1', role: 'developer' } as Member;

/** The gateway answering `status` to everything, and what it was asked (an in-memory JsonClient). */
function gatewayAnswering(status: number, body: unknown = {}) {
  const asked: { actor: unknown; method: string; path: string; body: unknown; headers: unknown }[] = [];
  const gateway = (actor: unknown): JsonClient => ({
    raw: async <T>(method: string, path: string, sent?: unknown, headers?: Record<string, string>) => {
      asked.push({ actor, method, path, body: sent, headers });
      return { status, body: body as T, headers: new Headers() };
    },
    call: () => Promise.reject(new Error('not used')),
  });
  return { asked, deps: { gateway } as unknown as ApiDeps };
}

describe('a call to the gateway as the member', () => {
  it('is made for the member (their assertion), with the Idempotency-Key, and its answer passed on as it came', async () => {
    const { asked, deps } = gatewayAnswering(422, { code: 'validation_failed' });
    const answer = await companyContext(deps).throughGateway(member, '/send', { text: 'hi' }, 'k1');
    expect(answer.status).toBe(422);
    expect(asked).toEqual([
      {
        actor: member,
        method: 'POST',
        path: '/send',
        body: { text: 'hi' },
        headers: { 'idempotency-key': 'k1' },
      },
    ]);
  });

  it('says a gateway refusing the dashboard is a setup fault (502), not the member signed out (401)', async () => {
    for (const status of [401, 403]) {
      const { deps } = gatewayAnswering(status);
      const refused = await companyContext(deps)
        .throughGateway(member, '/send', {})
        .catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(Problem);
      expect(refused).toMatchObject({ status: 502, code: 'gateway_refused_dashboard' });
    }
  });
});
