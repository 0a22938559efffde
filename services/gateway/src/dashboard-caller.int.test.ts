// The dashboard acting for a signed-in member: its Ed25519 assertion instead of an API key. Accepted, it is a
// request of the company like any key's (validation, idempotency, the company's rate limit, the event, attributed
// to the member); anything else that is not a good assertion is a 401 like a bad key, and charged like one.
import { generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import type { ClientRequestEvent, MessageEvent } from '@mds/contracts';
import { signCompanyAssertion } from '@mds/service-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientRequestTopic,
  collect,
  companyWithKey,
  eventually,
  messageTopic,
  post,
  startStack,
  type TestStack,
} from '../test/support.js';

const dashboardKey = generateKeyPairSync('ed25519');
const strangerKey = generateKeyPairSync('ed25519');
const publicX = (k: KeyObject) => k.export({ format: 'jwk' }).x!;

let stack: TestStack;
let acme: { companyId: string; apiKey: string; keyId: string };
let messages: Awaited<ReturnType<typeof collect<MessageEvent>>>;
let requests: Awaited<ReturnType<typeof collect<ClientRequestEvent>>>;
const memberId = randomUUID();

beforeAll(async () => {
  stack = await startStack({
    DASHBOARD_PUBLIC_KEYS: publicX(dashboardKey.publicKey),
    // Small, so the test reaches the limits in a few requests.
    AUTH_FAILURE_BURST: '4',
    AUTH_FAILURES_PER_ADDRESS_PER_SECOND: '0.01',
    RATE_LIMIT_OTHER_PER_COMPANY: '0.5',
    RATE_LIMIT_BURST_SECONDS: '4',
  });
  acme = await companyWithKey(stack, 'Acme');
  messages = await collect(stack, messageTopic);
  requests = await collect(stack, clientRequestTopic);
}, 120_000);
afterAll(async () => {
  await messages?.stop();
  await requests?.stop();
  await stack?.stop();
});

const asMember = async (companyId = acme.companyId, member = memberId, audience = 'gateway') => ({
  authorization: `Bearer ${await signCompanyAssertion(dashboardKey.privateKey, audience, { companyId, memberId: member, role: 'developer' })}`,
});

/** A JWT signed as given (Ed25519, or none), for the assertions the dashboard never makes. */
function token(payload: Record<string, unknown>, key: KeyObject | 'none' = dashboardKey.privateKey): string {
  const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const head = `${b64({ alg: key === 'none' ? 'none' : 'EdDSA', typ: 'JWT' })}.${b64(payload)}`;
  return `${head}.${key === 'none' ? '' : sign(null, Buffer.from(head), key).toString('base64url')}`;
}
const now = () => Math.floor(Date.now() / 1000);
const claims = (extra: Record<string, unknown> = {}) => ({
  iss: 'mds-dashboard',
  aud: 'gateway',
  sub: memberId,
  company_id: acme.companyId,
  role: 'owner',
  iat: now(),
  exp: now() + 60,
  ...extra,
});
const sendBody = { phone_number: '79123456789', text: 'Sent from the dashboard', service: 'telegram' };

describe('the dashboard acting for a member', () => {
  it('sends as the member: 202, the event of their company under the key id dashboard:<member_id>, idempotent', async () => {
    const headers = { ...(await asMember()), 'idempotency-key': 'compose-1' };
    const first = await post(stack, '/send', sendBody, headers);
    expect(first.status).toBe(202);
    const body = (await first.json()) as { event_id: string };
    const again = await post(stack, '/send', sendBody, {
      ...(await asMember()),
      'idempotency-key': 'compose-1',
    });
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([202, 'true']);
    expect(((await again.json()) as { event_id: string }).event_id).toBe(body.event_id);
    // The member's Idempotency-Keys are theirs: another member's same key is another message.
    const other = await post(stack, '/send', sendBody, {
      ...(await asMember(acme.companyId, randomUUID())),
      'idempotency-key': 'compose-1',
    });
    expect(((await other.json()) as { event_id: string }).event_id).not.toBe(body.event_id);

    const event = await eventually('the event', () =>
      messages.events.find((e) => e.metadata.streamId === body.event_id),
    );
    expect(event.metadata.companyId).toBe(acme.companyId);
    expect(event.event).toMatchObject({
      $case: 'messageAccepted',
      value: { apiKeyId: `dashboard:${memberId}`, idempotencyKey: 'compose-1' },
    });
    expect(messages.events.filter((e) => e.metadata.streamId === body.event_id)).toHaveLength(1);
  });

  it('is validated like any request, and shares the company rate limit with its keys', async () => {
    const invalid = await post(stack, '/send', { ...sendBody, service: 'icq' }, await asMember());
    expect([invalid.status, ((await invalid.json()) as { code: string }).code]).toEqual([
      422,
      'validation_failed',
    ]);
    // change_phone and client/check: the company's bucket holds 2 (0.5/s for 4 s); one by a key, one by the
    // member, and the member's next is the company's 429.
    const check = { phone_number: '79123456789' };
    expect((await post(stack, '/client/check', check, { 'x-api-key': acme.apiKey })).status).toBe(202);
    const byMember = await post(
      stack,
      '/change_phone',
      { old_phone: '79123456789', new_phone: '79123456780' },
      await asMember(),
    );
    expect(byMember.status).toBe(202);
    const { event_id } = (await byMember.json()) as { event_id: string };
    const limited = await post(stack, '/client/check', check, await asMember());
    expect(limited.status).toBe(429);
    expect(await limited.json()).toMatchObject({ code: 'rate_limited', violated_policy: 'other-company' });
    const event = await eventually('the request', () =>
      requests.events.find((e) => e.metadata.streamId === event_id),
    );
    expect(event.event).toMatchObject({
      $case: 'phoneChangeRequested',
      value: { apiKeyId: `dashboard:${memberId}` },
    });
  });

  it('refuses anything but a good assertion as it refuses a bad key (401, the spec body), and charges the address', async () => {
    const stranger = token(claims(), strangerKey.privateKey);
    const refused: [string, Record<string, string>][] = [
      ['an assertion signed by a key the gateway does not trust', { authorization: `Bearer ${stranger}` }],
      ['an unsigned token naming a real company', { authorization: `Bearer ${token(claims(), 'none')}` }],
      [
        'an assertion for another service (client-registry)',
        await asMember(acme.companyId, memberId, 'client-registry'),
      ],
      [
        'an expired assertion',
        { authorization: `Bearer ${token(claims({ iat: now() - 600, exp: now() - 120 }))}` },
      ],
      ['an assertion living too long', { authorization: `Bearer ${token(claims({ exp: now() + 3_600 }))}` }],
      [
        'an assertion naming no company',
        { authorization: `Bearer ${token(claims({ company_id: undefined }))}` },
      ],
      [
        'a company that is not an id',
        { authorization: `Bearer ${token(claims({ company_id: '../other' }))}` },
      ],
      ['another issuer', { authorization: `Bearer ${token(claims({ iss: 'someone' }))}` }],
      ['garbage', { authorization: 'Bearer abc.def.ghi' }],
      [
        'a company named in headers, no assertion',
        { 'x-company-id': acme.companyId, 'x-member-id': memberId },
      ],
      // An API key always wins: a good assertion beside a bad key is the bad key's 401.
      ['a good assertion beside a bad key', { ...(await asMember()), 'x-api-key': `${acme.apiKey}x` }],
    ];
    const answers: string[] = [];
    for (const [why, headers] of refused) {
      const response = await post(stack, '/client/check', { phone_number: '79123456789' }, headers);
      answers.push(`${why}: ${response.status}`);
      if (response.status === 401)
        expect(await response.json()).toEqual({ detail: 'Invalid or missing API key.' });
    }
    // The address may fail 4 times (AUTH_FAILURE_BURST), then 429 auth_rate_limited, forged assertions or not.
    expect(answers).toEqual(refused.map(([why], i) => `${why}: ${i < 4 ? 401 : 429}`));
  });
});

describe('a gateway without DASHBOARD_PUBLIC_KEYS', () => {
  it('accepts no dashboard assertion, however well signed', async () => {
    const bare = await startStack();
    try {
      const company = await companyWithKey(bare, 'Bare');
      const response = await post(bare, '/send', sendBody, await asMember(company.companyId));
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual({ detail: 'Invalid or missing API key.' });
    } finally {
      await bare.stop();
    }
  }, 120_000);
});
