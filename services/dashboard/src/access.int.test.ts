// People and access against real PostgreSQL and Kafka: client-registry, webhook-dispatcher and the dashboard
// in this process. Sign-in, sessions, CSRF, lockout, one-time links, roles, and one company never reaching
// another's anything.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  Browser,
  bot,
  companyWithOwner,
  eventually,
  member,
  messageStory,
  PASSWORD,
  publishStory,
  startDashboardStack,
  tokenOf,
  type DashboardStack,
} from '../test/support.js';

let stack: DashboardStack;
/** The dashboard's clock: real time unless a test stops it (so that a wait of 1 s is not over before it is seen). */
let stoppedAt: Date | undefined;
beforeAll(async () => {
  stack = await startDashboardStack({
    env: { SIGN_IN_PER_ADDRESS_PER_MINUTE: '6' },
    now: () => stoppedAt ?? new Date(),
  });
});
afterAll(async () => {
  await stack?.stop();
});

/** A browser coming from its own address (the dashboard trusts X-Forwarded-For from loopback). */
function browserFrom(address = `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`) {
  const browser = new Browser(stack.url);
  const call = browser.call.bind(browser);
  browser.call = (method, path, body, headers = {}) =>
    call(method, path, body, { 'x-forwarded-for': address, ...headers });
  return browser;
}

describe('the first owner', () => {
  it('is made by the operator, sets a password through a one-time link, and is signed in with a safe cookie', async () => {
    const { body: company } = await stack.admin<{ company_id: string }>('POST', '/companies', {
      name: 'First',
    });
    expect(
      (
        await stack.operator(
          'POST',
          `/companies/${company.company_id}/members`,
          { email: 'x@y.test' },
          'wrong-operator-token-x',
        )
      ).status,
    ).toBe(401);
    expect(
      (await stack.operator('POST', `/companies/${randomUUID()}/members`, { email: 'x@y.test' })).status,
    ).toBe(404);
    const bad = await stack.operator<{ code: string }>('POST', `/companies/${company.company_id}/members`, {
      email: 'not an email',
    });
    expect([bad.status, bad.body.code]).toEqual([422, 'validation_failed']);

    const invited = await stack.operator<{ link: string; role: string }>(
      'POST',
      `/companies/${company.company_id}/members`,
      {
        email: 'Boss@First.test',
      },
    );
    expect(invited.status).toBe(201);
    expect(invited.body.role).toBe('owner');
    expect(invited.body.link).toMatch(/^http:\/\/dashboard\.test\/set-password#[\w-]{43}$/);
    const again = await stack.operator<{ code: string }>('POST', `/companies/${company.company_id}/members`, {
      email: 'boss@first.test',
    });
    expect([again.status, again.body.code]).toEqual([409, 'email_taken']);

    const browser = browserFrom();
    const token = tokenOf(invited.body.link);
    expect(
      (await browser.call<{ email: string; purpose: string }>('POST', '/links/peek', { token })).body,
    ).toMatchObject({
      email: 'boss@first.test',
      purpose: 'invite',
    });
    const weak = await browser.call<{ code: string }>('POST', '/links/redeem', { token, password: 'short' });
    expect([weak.status, weak.body.code]).toEqual([422, 'weak_password']);
    const redeemed = await browser.call<{ member: { role: string }; company: { name: string } }>(
      'POST',
      '/links/redeem',
      {
        token,
        password: PASSWORD,
        name: 'The Boss',
      },
    );
    expect(redeemed.status).toBe(200);
    expect(redeemed.body.company.name).toBe('First');
    const cookie = redeemed.headers.getSetCookie()[0]!;
    expect(cookie).toMatch(/^mds_session=[\w-]{43};/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\//);
    expect((await browser.call('GET', '/session')).status).toBe(200);

    const reused = await browserFrom().call<{ code: string }>('POST', '/links/redeem', {
      token,
      password: PASSWORD,
    });
    expect([reused.status, reused.body.code]).toEqual([410, 'link_invalid']);
  });
});

describe('signing in', () => {
  it('refuses a wrong password and an unknown email alike, slows both down alike, and a reset link ends the wait', async () => {
    const { email, companyId } = await companyWithOwner(stack, 'Locky');
    // The waits are of the dashboard's clock: stopped, a loaded machine cannot outlast them between two requests.
    stoppedAt = new Date();
    onTestFinished(() => {
      stoppedAt = undefined;
    });
    const stranger = `nobody-${randomUUID()}@nowhere.test`;
    const browser = browserFrom();
    const wrong = await browser.call<{ code: string; detail: string }>('POST', '/session', {
      email,
      password: 'not the password at all',
    });
    const unknown = await browser.call<{ code: string; detail: string }>('POST', '/session', {
      email: stranger,
      password: 'not the password at all',
    });
    expect([wrong.status, wrong.body.code]).toEqual([401, 'invalid_credentials']);
    expect([unknown.status, unknown.body.code, unknown.body.detail]).toEqual([
      401,
      wrong.body.code,
      wrong.body.detail,
    ]);
    for (const who of [email, stranger]) {
      await browser.call('POST', '/session', { email: who, password: 'wrong again, still' });
      expect((await browser.call('POST', '/session', { email: who, password: 'and a third' })).status).toBe(
        401,
      );
    }
    // Slowed down now, the member and the stranger alike: even the right password waits, told how long.
    const member = await browserFrom().call<Record<string, unknown>>('POST', '/session', {
      email,
      password: PASSWORD,
    });
    const nobody = await browserFrom().call<Record<string, unknown>>('POST', '/session', {
      email: stranger,
      password: PASSWORD,
    });
    expect([member.status, member.body.code]).toEqual([429, 'too_many_attempts']);
    expect(member.headers.get('retry-after')).toBe('1');
    // Everything but the request's own id is the same.
    const { request_id: _a, ...memberBody } = member.body;
    const { request_id: _b, ...nobodyBody } = nobody.body;
    expect([nobody.status, nobodyBody, nobody.headers.get('retry-after')]).toEqual([429, memberBody, '1']);

    const reset = await stack.operator<{ link: string }>('POST', `/companies/${companyId}/members/reset`, {
      email,
    });
    expect(reset.status).toBe(200);
    const fresh = browserFrom();
    expect(
      (
        await fresh.call('POST', '/links/redeem', {
          token: tokenOf(reset.body.link),
          password: 'a brand new passphrase here',
        })
      ).status,
    ).toBe(200);
    expect(
      (await browserFrom().call('POST', '/session', { email, password: 'a brand new passphrase here' }))
        .status,
    ).toBe(200);
  });

  it('refuses an email or a name with characters no text may hold: 422 invalid_characters, never a 500', async () => {
    const { companyId } = await companyWithOwner(stack, 'Hostile');
    const refused = await browserFrom().call<{ code: string; errors: { pointer: string; code: string }[] }>(
      'POST',
      '/session',
      { email: 'owner\u0000@hostile.test', password: 'whatever it is, it is long' },
    );
    expect([refused.status, refused.body.errors]).toEqual([
      422,
      [expect.objectContaining({ pointer: '#/email', code: 'invalid_characters' })],
    ]);
    const named = await stack.operator<{ errors: { pointer: string; code: string }[] }>(
      'POST',
      `/companies/${companyId}/members`,
      { email: 'second@hostile.test', name: 'Iv\u0000an \ud800' },
    );
    expect([named.status, named.body.errors]).toEqual([
      422,
      [expect.objectContaining({ pointer: '#/name', code: 'invalid_characters' })],
    ]);
  });

  it('limits attempts per address whatever the email', async () => {
    const browser = browserFrom('10.200.0.1');
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push(
        (await browser.call('POST', '/session', { email: `n${i}@x.test`, password: 'nope nope nope' }))
          .status,
      );
    }
    expect(statuses.slice(0, 6)).toEqual([401, 401, 401, 401, 401, 401]);
    const limited = await browser.call<{ code: string }>('POST', '/session', {
      email: 'n@x.test',
      password: 'nope nope nope',
    });
    expect([limited.status, limited.body.code]).toEqual([429, 'too_many_attempts']);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // Another address is not held up.
    expect(
      (
        await browserFrom('10.200.0.2').call('POST', '/session', {
          email: 'n@x.test',
          password: 'nope nope nope',
        })
      ).status,
    ).toBe(401);
  });

  it('ends the session on sign-out, on the server', async () => {
    const { owner } = await companyWithOwner(stack, 'Leaver');
    const cookie = owner.cookie;
    expect((await owner.call('DELETE', '/session')).status).toBe(204);
    const stale = new Browser(stack.url);
    stale.cookie = cookie;
    expect((await stale.call<{ code: string }>('GET', '/session')).body.code).toBe('not_signed_in');
    expect((await stale.call('GET', '/messages')).status).toBe(401);
  });

  it("refuses a changing request without the session's CSRF token, or from another site", async () => {
    const { owner } = await companyWithOwner(stack, 'Forged');
    const noToken = await owner.call<{ code: string }>(
      'POST',
      '/keys',
      { label: 'x' },
      { 'x-csrf-token': '' },
    );
    expect([noToken.status, noToken.body.code]).toEqual([403, 'csrf_failed']);
    const otherSite = await owner.call<{ code: string }>(
      'POST',
      '/keys',
      { label: 'x' },
      { origin: 'https://evil.example' },
    );
    expect([otherSite.status, otherSite.body.code]).toEqual([403, 'csrf_failed']);
    const plain = await owner.call<{ key_id: string; scopes: string[] }>('POST', '/keys', { label: 'x' });
    expect([plain.status, plain.body.scopes]).toEqual([201, ['send', 'check', 'read']]);
    const mover = await owner.call<{ key_id: string; scopes: string[] }>('POST', '/keys', {
      label: 'm',
      scopes: ['change_phone'],
    });
    expect([mover.status, mover.body.scopes]).toEqual([201, ['change_phone']]);
    const chosen = await owner.call<{ key_id: string; scopes: string[] }>('POST', '/keys', {
      label: 'c',
      scopes: ['send', 'change_phone'],
    });
    expect([chosen.status, chosen.body.scopes]).toEqual([201, ['send', 'change_phone']]);
    const listed = await owner.call<{ keys: { key_id: string; scopes: string[] }[] }>('GET', '/keys');
    expect(
      Object.fromEntries(listed.body.keys.map((k) => [k.key_id, k.scopes])) as Record<string, string[]>,
    ).toEqual({
      [plain.body.key_id]: ['send', 'check', 'read'],
      [mover.body.key_id]: ['change_phone'],
      [chosen.body.key_id]: ['send', 'change_phone'],
    });
    expect((await owner.call('POST', '/keys', { label: 'y', scopes: [] })).status).toBe(422);
    expect((await owner.call('POST', '/keys', { label: 'y', scopes: ['root'] })).status).toBe(422);
  });
});

describe('roles', () => {
  it('a viewer reads every page and changes nothing; a developer changes all but members; the last owner stays', async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Roles');
    const { botId } = await bot(stack, companyId);
    const viewer = (await member(stack, owner, 'viewer')).browser;
    const developer = await member(stack, owner, 'developer');
    for (const path of [
      '/session',
      '/overview',
      '/messages',
      '/deliveries',
      '/keys',
      '/webhook',
      '/bots',
      '/members',
      '/clients/79123456789',
    ]) {
      expect([path, (await viewer.call('GET', path)).status]).toEqual([path, 200]);
    }
    const writes: [string, string, unknown?][] = [
      ['POST', '/keys', { label: 'v' }],
      ['DELETE', '/keys/abcdefabcdef'],
      ['PUT', '/webhook', { url: 'https://example.com/h' }],
      ['POST', '/webhook/enable'],
      ['POST', '/webhook/disable'],
      ['POST', '/webhook/secrets'],
      ['POST', '/webhook/rotate'],
      ['POST', '/webhook/test'],
      ['POST', '/bots', { messenger: 'telegram', name: 'x', token: 'y' }],
      ['DELETE', `/bots/${botId}`],
      ['PUT', `/bots/${botId}/default`],
      ['POST', `/bots/${botId}/check`],
      ['POST', '/send', {}],
      ['POST', '/clients/change-phone', {}],
      ['POST', `/messages/${randomUUID()}/resend-webhook`],
      ['POST', `/deliveries/msg_${'0'.repeat(32)}/resend`],
      ['POST', '/deliveries/recover', { since: '2026-01-01T00:00:00Z' }],
      ['POST', '/members', { email: 'a@b.test', role: 'viewer' }],
      ['PATCH', `/members/${randomUUID()}`, { role: 'owner' }],
      ['DELETE', `/members/${randomUUID()}`],
      ['POST', `/members/${randomUUID()}/reset-link`],
    ];
    for (const [method, path, body] of writes) {
      const answer = await viewer.call<{ code: string }>(method, path, body);
      expect([method, path, answer.status, answer.body.code]).toEqual([method, path, 403, 'forbidden']);
    }
    for (const [method, path, body] of writes.filter(([, p]) => p.startsWith('/members'))) {
      expect((await developer.browser.call(method, path, body)).status).toBe(403);
    }
    expect((await developer.browser.call('POST', '/keys', { label: 'dev' })).status).toBe(201);
    expect((await developer.browser.call('POST', `/bots/${botId}/check`)).status).toBe(200);
    // The webhook URL's query may hold the receiver's token: a viewer sees the URL without it.
    const url = 'https://hooks.example.com/in?token=receiver-secret';
    expect((await owner.call('PUT', '/webhook', { url })).status).toBe(200);
    const urlAs = async (b: typeof viewer) =>
      (await b.call<{ webhook: { url: string } }>('GET', '/webhook')).body.webhook.url;
    expect(await urlAs(viewer)).toBe('https://hooks.example.com/in?[redacted]');
    expect(await urlAs(developer.browser)).toBe(url);

    const members = (
      await owner.call<{ members: { member_id: string; email: string; role: string }[] }>('GET', '/members')
    ).body.members;
    const me = members.find((m) => m.role === 'owner')!;
    const last = await owner.call<{ code: string }>('PATCH', `/members/${me.member_id}`, { role: 'viewer' });
    expect([last.status, last.body.code]).toEqual([409, 'last_owner']);
    const dev = members.find((m) => m.email === developer.email)!;
    expect((await owner.call('PATCH', `/members/${dev.member_id}`, { role: 'owner' })).status).toBe(200);
    // A changed role applies to the member's next request.
    expect(
      (
        await developer.browser.call('POST', '/members', {
          email: `n-${randomUUID().slice(0, 6)}@x.test`,
          role: 'viewer',
        })
      ).status,
    ).toBe(201);
    expect((await owner.call('DELETE', `/members/${dev.member_id}`)).status).toBe(204);
    expect((await developer.browser.call('GET', '/session')).status).toBe(401);
  });
});

describe('companies apart', () => {
  it("one company's member reaches none of another company's messages, keys, bots, deliveries or members", async () => {
    const a = await companyWithOwner(stack, 'Alpha');
    const b = await companyWithOwner(stack, 'Beta');
    const bBot = await bot(stack, b.companyId);
    const bKey = (await b.owner.call<{ key_id: string; api_key: string }>('POST', '/keys', { label: 'b' }))
      .body;
    const story = messageStory({ companyId: b.companyId, botId: bBot.botId, webhook: ['retryable'] });
    await publishStory(stack.publisher, story);
    await eventually(
      'B sees its message',
      async () => (await b.owner.call('GET', `/messages/${story.id}`)).status === 200,
    );
    await eventually('B sees its delivery', async () =>
      (
        await b.owner.call<{ deliveries: { webhook_id: string }[] }>('GET', '/deliveries?status=pending')
      ).body.deliveries.some((d) => d.webhook_id === story.webhookId),
    );
    const bMember = (await b.owner.call<{ members: { member_id: string }[] }>('GET', '/members')).body
      .members[0]!.member_id;

    const attempts: [string, string, unknown?][] = [
      ['GET', `/messages/${story.id}`],
      ['POST', `/messages/${story.id}/resend-webhook`],
      ['POST', `/deliveries/${story.webhookId}/resend`],
      ['DELETE', `/keys/${bKey.key_id}`],
      ['DELETE', `/bots/${bBot.botId}`],
      ['PUT', `/bots/${bBot.botId}/default`],
      ['POST', `/bots/${bBot.botId}/check`],
      ['PATCH', `/members/${bMember}`, { role: 'viewer' }],
      ['DELETE', `/members/${bMember}`],
      ['POST', `/members/${bMember}/reset-link`],
    ];
    for (const [method, path, body] of attempts) {
      const answer = await a.owner.call(method, path, body);
      expect([method, path, answer.status]).toEqual([method, path, 404]);
    }
    // Sends and phone changes name no key: the dashboard signs them for the member's own company only (the
    // gateway's side: session.int.test.ts).
    // Lists show only A's own.
    expect((await a.owner.call<{ messages: unknown[] }>('GET', '/messages')).body.messages).toEqual([]);
    expect(
      (await a.owner.call<{ deliveries: unknown[] }>('GET', '/deliveries?status=pending')).body.deliveries,
    ).toEqual([]);
    expect(
      (await a.owner.call<{ keys: { key_id: string }[] }>('GET', '/keys')).body.keys.map((k) => k.key_id),
    ).not.toContain(bKey.key_id);
    expect((await a.owner.call<{ bots: unknown[] }>('GET', '/bots')).body.bots).toEqual([]);
    expect((await a.owner.call<{ members: unknown[] }>('GET', '/members')).body.members).toHaveLength(1);
    // And B still has all of it.
    expect((await b.owner.call('GET', `/messages/${story.id}`)).status).toBe(200);
    expect((await b.owner.call<{ bots: unknown[] }>('GET', '/bots')).body.bots).toHaveLength(1);
  });
});
