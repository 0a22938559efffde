// The door: what a flood of bad keys costs (bounded registry lookups, before any authentication), and what
// a key's scopes let it do. Counted at the real client-registry through the gateway's lookup counter.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@mds/local-infra/testing';
import { admin, companyWithKey, post, startStack, type TestStack } from '../test/support.js';

const sendBody = { phone_number: '79123456789', text: 'Your order 42 is ready', service: 'telegram' };
const randomKey = () => `mds_${randomBytes(6).toString('hex')}_${randomBytes(32).toString('base64url')}`;

/** The gateway's registry lookups so far that found no key (the real key's, asked again as its cache expires, aside). */
async function lookups(stack: TestStack): Promise<number> {
  const text = await (await fetch(`${stack.opsUrl}/metrics`)).text();
  return [
    ...text.matchAll(/^mds_gateway_api_key_lookups_total\{[^}]*answer="unknown"[^}]*\} (\d+)/gm),
  ].reduce((sum, m) => sum + Number(m[1]), 0);
}

describe('a flood of random keys', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // Behind a proxy on loopback, so the flood and the real company can come from addresses of their own.
    stack = await startStack({
      AUTH_FAILURES_PER_ADDRESS_PER_SECOND: '5',
      AUTH_FAILURE_BURST: '20',
      TRUST_PROXY: 'loopback',
    });
  });
  afterAll(() => stack?.stop());

  it('costs the registry a bounded number of lookups, and real keys are still served', async () => {
    const acme = await companyWithKey(stack, 'Acme');
    const real = { 'x-api-key': acme.apiKey, 'x-forwarded-for': '198.51.100.1' };
    const flood = { 'x-forwarded-for': '203.0.113.9' };
    expect((await post(stack, '/send', sendBody, real)).status).toBe(202);
    const before = await lookups(stack);
    const started = Date.now();
    const statuses = new Map<number, number>();
    let realServed = 0;
    let refused: Response | undefined;
    // 1,000 random well-formed keys, 50 at a time, with a real company's send between the batches.
    for (let batch = 0; batch < 20; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, () =>
          post(stack, '/send', sendBody, { ...flood, 'x-api-key': randomKey() }),
        ),
      );
      for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      refused ??= answers.find((a) => a.status === 429);
      // Its key's cache entry lasts 300 ms here: it is looked up again several times during the flood.
      if ((await post(stack, '/send', sendBody, real)).status === 202) realServed++;
    }
    const seconds = (Date.now() - started) / 1000;
    const asked = (await lookups(stack)) - before;
    // The address's bucket: 20 at once and 5 a second after that; everything else is refused before a lookup.
    expect(asked).toBeLessThanOrEqual(20 + Math.ceil(5 * seconds) + 1);
    expect(statuses.get(429)).toBeGreaterThanOrEqual(1_000 - asked - 1);
    expect((statuses.get(401) ?? 0) + (statuses.get(429) ?? 0)).toBe(1_000);
    expect(realServed).toBe(20);

    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await refused!.json()).toMatchObject({ status: 429, code: 'auth_rate_limited' });
  });

  it('from the address of a real company leaves that company at 100 % accepted', async () => {
    const acme = await companyWithKey(stack, 'Acme behind the NAT');
    const shared = '198.51.100.77';
    const real = { 'x-api-key': acme.apiKey, 'x-forwarded-for': shared };
    expect((await post(stack, '/send', sendBody, real)).status).toBe(202);
    const statuses = new Map<number, number>();
    let realServed = 0;
    // 1,000 random keys from the company's own address, 50 at a time, the company's send amid each batch.
    for (let batch = 0; batch < 20; batch++) {
      const [mine, ...flood] = await Promise.all([
        post(stack, '/send', sendBody, real),
        ...Array.from({ length: 50 }, () =>
          post(stack, '/send', sendBody, { 'x-forwarded-for': shared, 'x-api-key': randomKey() }),
        ),
      ]);
      if (mine.status === 202) realServed++;
      for (const a of flood) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
    }
    expect(realServed).toBe(20);
    // The flood itself was held to the address's bucket (most of it refused before any lookup).
    expect(statuses.get(429)).toBeGreaterThan(800);
  });

  it('refuses a malformed key with 401 without asking the registry', async () => {
    const before = await lookups(stack);
    for (const key of ['x', 'mds_short_key', `mds_${'Z'.repeat(12)}_${'a'.repeat(43)}`]) {
      const answer = await post(stack, '/send', sendBody, {
        'x-api-key': key,
        'x-forwarded-for': '192.0.2.50',
      });
      expect(answer.status).toBe(401);
      expect(await answer.json()).toEqual({ detail: 'Invalid or missing API key.' });
    }
    expect(await lookups(stack)).toBe(before);
  });
});

/** The gateway's count of API key ids it knows to be companies'. */
async function knownIds(stack: TestStack): Promise<number> {
  const text = await (await fetch(`${stack.opsUrl}/metrics`)).text();
  return Number(/^mds_gateway_api_key_ids_known(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
}

describe('many companies behind one address', () => {
  let stack: TestStack;
  beforeAll(async () => {
    // The default allowance (2 a second, 20 at once) and a key cache of 300 ms: every company's entry lapses
    // many times over, as 30 s do at the pipeline benchmark's length.
    stack = await startStack({ TRUST_PROXY: 'loopback', API_KEY_DIRECTORY_REFRESH_MS: '200' });
  });
  afterAll(() => stack?.stop());

  it('get no 429 auth_rate_limited however fast and however cold their keys are', async () => {
    const companies = await Promise.all(
      Array.from({ length: 60 }, (_, i) => companyWithKey(stack, `Tenant ${i}`, ['send'])),
    );
    await eventually('the gateway lists the 60 keys', async () => (await knownIds(stack)) >= 60);
    const statuses = new Map<string, number>();
    // 30 rounds of every company at once (1,800 sends) from one address, some rounds after their keys lapsed.
    for (let round = 0; round < 30; round++) {
      if (round % 10 === 9) await new Promise((resolve) => setTimeout(resolve, 350));
      const answers = await Promise.all(
        companies.map((c) =>
          post(stack, '/send', sendBody, { 'x-api-key': c.apiKey, 'x-forwarded-for': '203.0.113.200' }),
        ),
      );
      for (const a of answers) {
        const code = a.status === 202 ? '202' : `${a.status} ${((await a.json()) as { code?: string }).code}`;
        statuses.set(code, (statuses.get(code) ?? 0) + 1);
      }
    }
    expect(Object.fromEntries(statuses)).toEqual({ '202': 1_800 });
  });

  it('a new key, not listed yet, is charged once and then known', async () => {
    const late = await companyWithKey(stack, 'Latecomer', ['send']);
    const from = { 'x-api-key': late.apiKey, 'x-forwarded-for': '203.0.113.201' };
    expect((await post(stack, '/send', sendBody, from)).status).toBe(202);
    // Its address's bucket is then spent by guesses; the company's key is not a guess.
    for (let i = 0; i < 40; i++)
      await post(stack, '/send', sendBody, { 'x-api-key': randomKey(), 'x-forwarded-for': '203.0.113.201' });
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect((await post(stack, '/send', sendBody, from)).status).toBe(202);
  });
});

describe('client addresses', () => {
  it('ignores X-Forwarded-For unless TRUST_PROXY is set, and then counts the address it gives', async () => {
    const direct = await startStack({ AUTH_FAILURES_PER_ADDRESS_PER_SECOND: '1', AUTH_FAILURE_BURST: '2' });
    const proxied = await startStack({
      AUTH_FAILURES_PER_ADDRESS_PER_SECOND: '1',
      AUTH_FAILURE_BURST: '2',
      TRUST_PROXY: 'loopback',
    });
    try {
      const spoofed = async (stack: TestStack) => {
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) {
          const answer = await post(stack, '/send', sendBody, {
            'x-api-key': randomKey(),
            'x-forwarded-for': `203.0.113.${i}`,
          });
          statuses.push(answer.status);
        }
        return statuses;
      };
      // Not trusted: all six come from 127.0.0.1, whose bucket holds 2.
      expect(await spoofed(direct)).toEqual([401, 401, 429, 429, 429, 429]);
      // Trusted (the proxy is on loopback): six addresses, each with a bucket of its own.
      expect(await spoofed(proxied)).toEqual([401, 401, 401, 401, 401, 401]);
    } finally {
      await direct.stop();
      await proxied.stop();
    }
  });
});

describe('key scopes', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(() => stack?.stop());

  it('a key minted without scopes may send, check and read, but not change_phone (403 insufficient_scope)', async () => {
    const company = await companyWithKey(stack, 'Legacy', 'unset');
    const key = { 'x-api-key': company.apiKey };
    expect((await post(stack, '/send', sendBody, key)).status).toBe(202);
    expect((await post(stack, '/client/check', { phone_number: '79123456789' }, key)).status).toBe(202);
    const refused = await post(
      stack,
      '/change_phone',
      { old_phone: '79123456789', new_phone: '79123456780' },
      key,
    );
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      status: 403,
      code: 'insufficient_scope',
      required_scope: 'change_phone',
    });
    const shown = await admin<{ api_keys: { scopes: string[] }[] }>(
      stack,
      'GET',
      `/companies/${company.companyId}`,
    );
    expect(shown.api_keys[0]!.scopes).toEqual(['send', 'check', 'read']);
  });

  it('a key does only what its scopes say', async () => {
    const mover = await companyWithKey(stack, 'Mover', ['change_phone']);
    const key = { 'x-api-key': mover.apiKey };
    expect(
      (await post(stack, '/change_phone', { old_phone: '79123456789', new_phone: '79123456780' }, key))
        .status,
    ).toBe(202);
    const send = await post(stack, '/send', sendBody, key);
    expect(send.status).toBe(403);
    expect(await send.json()).toMatchObject({ code: 'insufficient_scope', required_scope: 'send' });
    expect((await post(stack, '/client/check', { phone_number: '79123456789' }, key)).status).toBe(403);
    const read = await fetch(`${stack.gatewayUrl}/api/v1/events/${crypto.randomUUID()}`, { headers: key });
    expect(read.status).toBe(403);
  });

  it('a key whose scopes are all unknown to this build may do nothing (no fallback to the default)', async () => {
    const company = await companyWithKey(stack, 'Newer', ['send']);
    // As a newer registry would have issued it: scopes this build has never heard of.
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      await db.query(`update client_registry.api_keys set scopes = '{export,archive}' where key_id = $1`, [
        company.keyId,
      ]);
    } finally {
      await db.end();
    }
    const key = { 'x-api-key': company.apiKey };
    for (const [path, body, scope] of [
      ['/send', sendBody, 'send'],
      ['/client/check', { phone_number: '79123456789' }, 'check'],
      ['/change_phone', { old_phone: '79123456789', new_phone: '79123456780' }, 'change_phone'],
    ] as const) {
      const answer = await post(stack, path, body, key);
      expect(answer.status).toBe(403);
      expect(await answer.json()).toMatchObject({ code: 'insufficient_scope', required_scope: scope });
    }
    const read = await fetch(`${stack.gatewayUrl}/api/v1/events/${crypto.randomUUID()}`, { headers: key });
    expect(read.status).toBe(403);
  });

  it('the admin API refuses an unknown scope or none', async () => {
    const company = await admin<{ company_id: string }>(stack, 'POST', '/companies', { name: 'Bad' });
    for (const scopes of [['send', 'everything'], []]) {
      const answer = await fetch(`${stack.registryUrl}/admin/v1/companies/${company.company_id}/api-keys`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-admin-token-0123456789', 'content-type': 'application/json' },
        body: JSON.stringify({ scopes }),
      });
      expect(answer.status).toBe(422);
    }
  });
});
