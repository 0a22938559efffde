// Acting as yourself: the dashboard sends and changes numbers through the real gateway as the signed-in member
// (its assertion, no API key), the message lands in the log attributed to the member, and the owner reads
// every action in the audit trail. Real PostgreSQL, Kafka, client-registry, webhook-dispatcher and gateway.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bot,
  companyWithOwner,
  eventually,
  member,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

let stack: DashboardStack;
beforeAll(async () => {
  stack = await startDashboardStack({ gateway: true });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
});

interface Entry {
  id: string;
  at: string;
  action: string;
  actor: { member_id: string; email: string; name: string } | null;
  target: string;
  target_member: { member_id: string; email: string } | null;
  detail: unknown;
}
type Trail = { entries: Entry[]; next_cursor: string | null };

const memberIdOf = async (browser: { call: Awaited<ReturnType<typeof companyWithOwner>>['owner']['call'] }) =>
  (await browser.call<{ member: { member_id: string } }>('GET', '/session')).body.member.member_id;

describe('sending as the signed-in member', () => {
  it('sends without an API key: the gateway takes it as the company, the log names the member, the trail has it once', async () => {
    const acme = await companyWithOwner(stack, 'Acme');
    const developer = await member(stack, acme.owner, 'developer');
    const developerId = await memberIdOf(developer.browser);
    const message = { phone_number: '+7 912 345-67-89', service: 'telegram', text: 'Your order has shipped' };
    const compose = randomUUID();
    const sent = await developer.browser.call<{ status: string; event_id: string }>('POST', '/send', {
      ...message,
      idempotency_key: compose,
    });
    expect([sent.status, sent.body.status]).toEqual([202, 'accepted']);
    // A double click: the same message, not another, and not another row in the trail.
    const again = await developer.browser.call<{ event_id: string }>('POST', '/send', {
      ...message,
      idempotency_key: compose,
    });
    expect([again.status, again.body.event_id]).toEqual([202, sent.body.event_id]);

    const row = await eventually('the message in the log', async () => {
      const page = await acme.owner.call<{ messages: { message_id: string; api_key_id: string }[] }>(
        'GET',
        '/messages',
      );
      return page.body.messages.find((m) => m.message_id === sent.body.event_id);
    });
    expect(row.api_key_id).toBe(`dashboard:${developerId}`);

    // The gateway's validation answers as it does for a key, field by field.
    const invalid = await developer.browser.call<{ code: string; errors: { pointer: string }[] }>(
      'POST',
      '/send',
      { ...message, phone_number: 'not a number' },
    );
    expect([invalid.status, invalid.body.code]).toEqual([422, 'validation_failed']);
    expect(invalid.body.errors.map((e) => e.pointer)).toEqual(['#/phone_number']);
    // A pasted key is no longer a field: nothing secret is asked for.
    const withKey = await developer.browser.call<{ code: string }>('POST', '/send', {
      ...message,
      api_key: `mds_${'a'.repeat(12)}_${'b'.repeat(43)}`,
    });
    expect([withKey.status, withKey.body.code]).toEqual([422, 'validation_failed']);

    const changed = await developer.browser.call<{ event_id: string }>('POST', '/clients/change-phone', {
      old_phone: '79123456789',
      new_phone: '79123456780',
    });
    expect(changed.status).toBe(202);

    const trail = (await acme.owner.call<Trail>('GET', '/audit')).body.entries;
    // Each route wrote its own row (none left to the guard's "request" rows), the replay none.
    expect(trail.filter((e) => e.action === 'request')).toEqual([]);
    expect(
      trail
        .filter((e) => ['message.sent', 'client.change_phone'].includes(e.action))
        .map((e) => [e.action, e.target, e.actor?.email]),
    ).toEqual([
      ['client.change_phone', changed.body.event_id, developer.email],
      ['message.sent', sent.body.event_id, developer.email],
    ]);
  }, 60_000);
});

describe('the audit trail', () => {
  it('is the owners’ to read, newest first, paged, one company’s only, naming who, what, when and to whom', async () => {
    const acme = await companyWithOwner(stack, 'Trail');
    const other = await companyWithOwner(stack, 'Elsewhere');
    const ownerId = await memberIdOf(acme.owner);
    const developer = await member(stack, acme.owner, 'developer');
    const viewer = await member(stack, acme.owner, 'viewer');
    const developerId = await memberIdOf(developer.browser);
    const northBot = await bot(stack, acme.companyId);
    // Actions that left no row before: a bot's check, a reset link.
    expect((await developer.browser.call('POST', `/bots/${northBot.botId}/check`)).status).toBe(200);
    expect((await acme.owner.call('POST', `/members/${developerId}/reset-link`)).status).toBe(200);
    expect((await other.owner.call('POST', '/keys', { label: 'not yours' })).status).toBe(201);

    const first = await acme.owner.call<Trail>('GET', '/audit?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.entries.map((e) => [e.action, e.actor?.member_id, e.target])).toEqual([
      ['member.reset_link', ownerId, developerId],
      ['bot.checked', developerId, northBot.botId],
    ]);
    expect(first.body.entries[0]!.target_member?.email).toBe(developer.email);
    expect(Date.parse(first.body.entries[0]!.at)).toBeGreaterThan(Date.now() - 60_000);
    const rest = await acme.owner.call<Trail>(`GET`, `/audit?limit=200&cursor=${first.body.next_cursor}`);
    expect(rest.body.next_cursor).toBeNull();
    // The two invitations by the owner, the owner's own by the operator (no member), nothing of the other company.
    expect(
      rest.body.entries.map((e) => [e.action, e.actor?.member_id ?? null, e.target_member?.email]),
    ).toEqual([
      ['member.invited', ownerId, viewer.email],
      ['member.invited', ownerId, developer.email],
      ['member.invited', null, acme.email],
    ]);

    for (const browser of [developer.browser, viewer.browser]) {
      const refused = await browser.call<{ code: string }>('GET', '/audit');
      expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    }
    for (const bad of ['cursor=abc', 'cursor=0', 'limit=0', 'limit=201', 'since=yesterday']) {
      const answer = await acme.owner.call<{ code: string }>('GET', `/audit?${bad}`);
      expect([bad, answer.status, answer.body.code]).toEqual([bad, 422, 'validation_failed']);
    }
    expect((await other.owner.call<Trail>('GET', '/audit')).body.entries.map((e) => e.action)).toEqual([
      'api_key.created',
      'member.invited',
    ]);
  }, 60_000);
});
