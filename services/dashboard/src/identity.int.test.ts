// The dashboard acts for one company at a time, and the services enforce it: client-registry and
// webhook-dispatcher, called with the dashboard's identity (its signed assertion for a company), refuse
// another company's paths and every all-company operation; the operator's token still does everything. And the
// operator's API is on its own listener, never on the public port.
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dashboardSigningKey, signCompanyAssertion } from '@mds/service-kit';
import {
  companyWithOwner,
  REGISTRY_TOKEN,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

let stack: DashboardStack;
beforeAll(async () => {
  stack = await startDashboardStack();
});
afterAll(async () => {
  await stack?.stop();
});

/** A call to a service's admin API with `authorization`; answers status and body. */
async function call(base: string, method: string, path: string, authorization: string, body?: unknown) {
  const response = await fetch(`${base}/admin/v1${path}`, {
    method,
    headers: { authorization, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown> };
}

/** The dashboard's identity, as it calls `audience` for a member of `companyId`. */
async function asDashboard(audience: string, companyId: string, key = stack.signingKey) {
  const assertion = await signCompanyAssertion(dashboardSigningKey(key), audience, {
    companyId,
    memberId: randomUUID(),
    role: 'owner',
  });
  return `Bearer ${assertion}`;
}

describe("the dashboard's identity at client-registry", () => {
  it('acts for its company, and is refused for another and for every all-company operation', async () => {
    const mine = (await companyWithOwner(stack, 'Mine')).companyId;
    const theirs = (await companyWithOwner(stack, 'Theirs')).companyId;
    const me = await asDashboard('client-registry', mine);
    const registry = stack.registryUrl;

    expect((await call(registry, 'GET', `/companies/${mine}`, me)).status).toBe(200);
    const key = await call(registry, 'POST', `/companies/${mine}/api-keys`, me, { label: 'ok' });
    expect(key.status).toBe(201);

    for (const [method, path, body] of [
      ['GET', `/companies/${theirs}`],
      ['POST', `/companies/${theirs}/api-keys`, { label: 'stolen' }],
      ['GET', `/companies/${theirs}/webhook/secrets`],
      ['PUT', `/companies/${theirs}/webhook`, { url: 'https://evil.example/hook' }],
      ['GET', `/companies/${theirs}/clients/79123456789`],
    ] as const) {
      const refused = await call(registry, method, path, me, body);
      expect([method, path, refused.status, refused.body.code]).toEqual([
        method,
        path,
        403,
        'company_not_allowed',
      ]);
    }
    for (const [method, path, body] of [
      ['GET', '/companies'],
      ['POST', '/companies', { name: 'Made by the dashboard' }],
      ['POST', '/keys/reseal'],
      ['POST', `/companies/${mine}/clients/79123456789/forget`],
      ['POST', `/companies/${theirs}/clients/79123456789/forget`],
    ] as const) {
      const refused = await call(registry, method, path, me, body);
      expect([method, path, refused.status]).toEqual([method, path, 403]);
    }

    // The operator's token still does everything.
    const operator = `Bearer ${REGISTRY_TOKEN}`;
    expect((await call(registry, 'GET', '/companies', operator)).status).toBe(200);
    expect((await call(registry, 'GET', `/companies/${theirs}`, operator)).status).toBe(200);
    expect(
      (await call(registry, 'POST', `/companies/${theirs}/clients/79123456789/forget`, operator)).status,
    ).toBe(200);
  });

  it('refuses an assertion for another service, signed by another key, or expired', async () => {
    const mine = (await companyWithOwner(stack, 'Careful')).companyId;
    const path = `/companies/${mine}`;
    const forDispatcher = await asDashboard('webhook-dispatcher', mine);
    expect((await call(stack.registryUrl, 'GET', path, forDispatcher)).status).toBe(401);
    const stranger = generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }).d!;
    expect(
      (await call(stack.registryUrl, 'GET', path, await asDashboard('client-registry', mine, stranger)))
        .status,
    ).toBe(401);
    const { SignJWT } = await import('jose');
    const expired = await new SignJWT({ company_id: mine })
      .setProtectedHeader({ alg: 'EdDSA' })
      .setIssuer('mds-dashboard')
      .setAudience('client-registry')
      .setSubject('someone')
      .setIssuedAt(Math.floor(Date.now() / 1000) - 600)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 300)
      .sign(dashboardSigningKey(stack.signingKey));
    expect((await call(stack.registryUrl, 'GET', path, `Bearer ${expired}`)).status).toBe(401);
    expect((await call(stack.registryUrl, 'GET', path, 'Bearer not-a-token')).status).toBe(401);
  });
});

describe("the dashboard's identity at webhook-dispatcher", () => {
  it("acts for its company only: another's recovery, test event and deliveries are refused", async () => {
    const mine = (await companyWithOwner(stack, 'Hooks mine')).companyId;
    const theirs = (await companyWithOwner(stack, 'Hooks theirs')).companyId;
    const me = await asDashboard('webhook-dispatcher', mine);
    const dispatcher = stack.dispatcherUrl!;
    const since = { since: new Date(Date.now() - 3_600_000).toISOString() };
    expect((await call(dispatcher, 'POST', `/companies/${mine}/recover`, me, since)).status).toBe(202);
    for (const path of [`/companies/${theirs}/recover`, `/companies/${theirs}/test-event`]) {
      const refused = await call(dispatcher, 'POST', path, me, since);
      expect([path, refused.status, refused.body.code]).toEqual([path, 403, 'company_not_allowed']);
    }
    // By the operator, the same recovery for the other company is accepted.
    const operator = `Bearer ${'dashboard-test-dispatcher-token'}`;
    expect((await call(dispatcher, 'POST', `/companies/${theirs}/recover`, operator, since)).status).toBe(
      202,
    );
  });
});

describe("the operator's API", () => {
  it('answers on its own listener, and is a 404 on the public port', async () => {
    const { companyId } = await companyWithOwner(stack, 'Operated');
    const path = `/admin/v1/companies/${companyId}/members`;
    const publicAnswer = await fetch(`${stack.url}${path}`, {
      headers: { authorization: 'Bearer dashboard-test-operator-token' },
    });
    expect(publicAnswer.status).toBe(404);
    const operatorAnswer = await stack.operator('GET', `/companies/${companyId}/members`);
    expect(operatorAnswer.status).toBe(200);
  });
});
