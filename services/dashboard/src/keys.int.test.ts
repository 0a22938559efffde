// The keys page's API against real PostgreSQL and Kafka (client-registry and the dashboard in this process):
// rolling with an overlap, each key's request log projected from mds.api-requests.v1, "last used", and what
// is refused (a bad overlap, a viewer, another company's key, a forged cursor).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent, topics, type ApiRequestEvent } from '@mds/contracts';
import {
  companyWithOwner,
  eventually,
  member,
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

interface Key {
  key_id: string;
  prefix: string;
  label: string;
  expires_at: string | null;
  rolled_from: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
  created_by: { email: string } | null;
}

/** What the gateway writes for one request a key made. */
function served(companyId: string, keyId: string, at: Date, status: number, subjectEventId = '') {
  return {
    topic: topics.apiRequests,
    key: keyId,
    record: newEvent<ApiRequestEvent>({
      eventId: randomUUID(),
      occurredAt: at,
      companyId,
      streamId: keyId,
      producer: 'gateway',
      event: {
        $case: 'apiRequestServed',
        value: { keyId, operation: 'send', status, subjectEventId, requestId: randomUUID(), durationMs: 5 },
      },
    }),
  };
}

describe('API keys in the dashboard', () => {
  it("rolls a key with the chosen overlap: the new one is the roller's, shown once; the old one says when it ends", async () => {
    const { owner, email } = await companyWithOwner(stack, 'Roller');
    const issued = await owner.call<{ key_id: string }>('POST', '/keys', { label: 'shop backend' });
    const keyId = issued.body.key_id;
    const rolled = await owner.call<{
      key_id: string;
      api_key: string;
      label: string;
      rolled_from: string;
      old_key_expires_at: string;
    }>('POST', `/keys/${keyId}/roll`, { expires_in_seconds: 3_600 });
    expect(rolled.status).toBe(201);
    expect(rolled.body).toMatchObject({ label: 'shop backend', rolled_from: keyId });
    expect(rolled.body.api_key).toMatch(/^mds_/);
    expect(Date.parse(rolled.body.old_key_expires_at) - Date.now()).toBeGreaterThan(3_500_000);

    const keys = (await owner.call<{ keys: Key[]; request_log_days: number }>('GET', '/keys')).body;
    expect(keys.request_log_days).toBe(30);
    const old = keys.keys.find((k) => k.key_id === keyId)!;
    const fresh = keys.keys.find((k) => k.key_id === rolled.body.key_id)!;
    expect(old).toMatchObject({ expires_at: rolled.body.old_key_expires_at, revoked_at: null });
    expect(fresh).toMatchObject({ rolled_from: keyId, label: 'shop backend', created_by: { email } });
    expect(JSON.stringify(keys)).not.toContain(rolled.body.api_key);

    // No overlap: the old key ends at once.
    const atOnce = await owner.call('POST', `/keys/${rolled.body.key_id}/roll`, { expires_in_seconds: 0 });
    expect(atOnce.status).toBe(201);
    const after = (await owner.call<{ keys: Key[] }>('GET', '/keys')).body.keys;
    expect(after.find((k) => k.key_id === rolled.body.key_id)?.revoked_at).not.toBeNull();
    // An ended key cannot be rolled.
    const ended = await owner.call<{ code: string }>('POST', `/keys/${rolled.body.key_id}/roll`, {
      expires_in_seconds: 3_600,
    });
    expect(ended.status).toBe(409);
  });

  it('refuses an overlap it does not offer, a viewer, and a key of another company', async () => {
    const { owner } = await companyWithOwner(stack, 'Refusals');
    const other = await companyWithOwner(stack, 'Others');
    const keyId = (await owner.call<{ key_id: string }>('POST', '/keys', { label: 'k' })).body.key_id;
    const theirs = (await other.owner.call<{ key_id: string }>('POST', '/keys', { label: 't' })).body.key_id;
    for (const body of [
      { expires_in_seconds: 42 },
      { expires_in_seconds: '3600' },
      { expires_in_seconds: 604_801 },
      {},
      { expires_in_seconds: 3_600, label: 'x' },
    ]) {
      const answer = await owner.call<{ code: string }>('POST', `/keys/${keyId}/roll`, body);
      expect({ body, status: answer.status }).toEqual({ body, status: 422 });
    }
    expect((await owner.call('POST', `/keys/${theirs}/roll`, { expires_in_seconds: 0 })).status).toBe(404);
    expect((await owner.call('GET', `/keys/${theirs}/requests`)).status).toBe(404);
    expect((await owner.call('GET', `/keys/${keyId}/requests?cursor=forged`)).status).toBe(422);
    expect((await owner.call('GET', `/keys/${keyId}/requests?limit=0`)).status).toBe(422);
    expect((await owner.call('GET', `/keys/${keyId}/requests?limit=500`)).status).toBe(422);
    const viewer = (await member(stack, owner, 'viewer')).browser;
    const refused = await viewer.call<{ code: string }>('POST', `/keys/${keyId}/roll`, {
      expires_in_seconds: 0,
    });
    expect([refused.status, refused.body.code]).toEqual([403, 'forbidden']);
    expect((await viewer.call('GET', `/keys/${keyId}/requests`)).status).toBe(200);
    // Nothing refused touched the key; the other company's key is still theirs and working.
    const keys = (await other.owner.call<{ keys: Key[] }>('GET', '/keys')).body.keys;
    expect(keys.find((k) => k.key_id === theirs)).toMatchObject({ revoked_at: null, expires_at: null });
  });

  it("projects the request log into each key's requests, newest first, and its last use", async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Logged');
    const keyId = (await owner.call<{ key_id: string }>('POST', '/keys', { label: 'api' })).body.key_id;
    const base = Date.now() - 10_000;
    const eventId = randomUUID();
    await stack.publisher.publish(
      [
        served(companyId, keyId, new Date(base), 202, eventId),
        served(companyId, keyId, new Date(base + 1_000), 422),
        served(companyId, keyId, new Date(base + 2_000), 429),
      ],
      { timeoutMs: 10_000 },
    );
    const page = await eventually('the requests projected', async () => {
      const answer = await owner.call<{ requests: { status: number; event_id: string | null }[] }>(
        'GET',
        `/keys/${keyId}/requests?limit=2`,
      );
      return answer.body.requests.length === 2 ? answer.body : undefined;
    });
    expect(page.requests.map((r) => r.status)).toEqual([429, 422]);
    const next = (page as unknown as { next_cursor: string }).next_cursor;
    const rest = await owner.call<{
      requests: { status: number; event_id: string | null }[];
      next_cursor: null;
    }>('GET', `/keys/${keyId}/requests?limit=2&cursor=${encodeURIComponent(next)}`);
    expect(rest.body).toMatchObject({ requests: [{ status: 202, event_id: eventId }], next_cursor: null });
    const keys = (await owner.call<{ keys: Key[] }>('GET', '/keys')).body.keys;
    expect(keys.find((k) => k.key_id === keyId)?.last_used_at).toBe(new Date(base + 2_000).toISOString());
  });
});
