// The pages' data from the log, against real Kafka and PostgreSQL: events published as the services write them
// become the message log, timelines, usage and the overview; keys and bots are acted on through
// client-registry. No webhook-dispatcher here: every webhook event of these stories is the test's own.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newEvent, topics, type BotUpdateEvent, type Complete } from '@mds/contracts';
import {
  bot,
  companyWithOwner,
  eventually,
  messageStory,
  publishStory,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

let stack: DashboardStack;

beforeAll(async () => {
  stack = await startDashboardStack({ dispatcher: false });
});
afterAll(async () => {
  await stack?.stop();
});

interface Row {
  message_id: string;
  state: string;
  error_code: string | null;
  phone: string;
  webhook_status: string | null;
  bot_id: string | null;
}

describe('the message log and timelines', () => {
  it("folds a message's story into its row and its timeline, in order, and counts it once when the log repeats it", async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Story');
    const { botId } = await bot(stack, companyId);
    const story = messageStory({ companyId, botId, webhook: ['retryable', 'succeeded'] });
    await publishStory(stack.publisher, story);
    const detail = await eventually('the story told', async () => {
      const d = await owner.call<{
        message: Row;
        timeline: { type: string; data: Record<string, unknown> }[];
      }>('GET', `/messages/${story.id}`);
      // The story's events are on three topics, read independently: wait for all five.
      return d.status === 200 &&
        d.body.message?.webhook_status === 'delivered' &&
        d.body.timeline.length === 5
        ? d.body
        : undefined;
    });
    expect(detail.message).toMatchObject({
      state: 'sent',
      phone: '79123456789',
      bot_id: botId,
      webhook_status: 'delivered',
    });
    expect(detail.timeline.map((e) => e.type)).toEqual([
      'MessageAccepted',
      'DeliveryRequested',
      'MessageSent',
      'WebhookAttempted',
      'WebhookAttempted',
    ]);
    expect(detail.timeline[0]!.data).toMatchObject({
      text: 'Your order has shipped',
      buttons: [{ text: 'Track', url: 'https://example.com/track' }],
    });
    expect(detail.timeline[1]!.data).toMatchObject({ bot_id: botId, chat_id: '5001' });
    expect(detail.timeline[3]!.data).toMatchObject({ attempt: 1, status_code: 503, outcome: 'retryable' });
    // The story's events carry an answer excerpt, as events written before excerpts left the log did: the
    // page never shows one from the read model (only the dispatcher's attempt log, absent here).
    expect(detail.timeline[3]!.data).not.toHaveProperty('response_excerpt');
    const before = (await owner.call<{ totals: { sent: number } }>('GET', '/overview?range=1h')).body.totals;
    expect(before.sent).toBe(1);

    // The log hands the same events again (a consumer restarted before committing): nothing changes.
    await publishStory(stack.publisher, story);
    const marker = messageStory({ companyId, botId });
    await publishStory(stack.publisher, marker);
    await eventually(
      'the marker after the repeat',
      async () =>
        (await owner.call<{ message: Row }>('GET', `/messages/${marker.id}`)).body.message?.state === 'sent',
    );
    const after = await owner.call<{ timeline: unknown[] }>('GET', `/messages/${story.id}`);
    expect(after.body.timeline).toHaveLength(5);
    expect(
      (await owner.call<{ totals: { sent: number } }>('GET', '/overview?range=1h')).body.totals.sent,
    ).toBe(2);
    expect((await owner.call('GET', '/messages/not-a-uuid')).status).toBe(404);
    expect((await owner.call('GET', `/messages/${randomUUID()}`)).status).toBe(404);
  });

  it('searches by state, error code, phone and time, and pages by cursor without gaps or repeats', async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Pages');
    const { botId } = await bot(stack, companyId);
    const start = new Date(Date.now() - 60 * 60_000);
    const stories = Array.from({ length: 30 }, (_, i) =>
      messageStory({
        companyId,
        botId,
        phone: i % 3 === 0 ? `7916000${String(i).padStart(4, '0')}` : `7903000${String(i).padStart(4, '0')}`,
        at: new Date(start.getTime() + i * 60_000),
        outcome:
          i % 5 === 0
            ? { sent: false, errorCode: i % 10 === 0 ? 'CLIENT_NOT_FOUND' : 'BOT_BLOCKED_BY_USER' }
            : { sent: true },
      }),
    );
    for (const s of stories) await publishStory(stack.publisher, s);
    await eventually('30 messages decided', async () => {
      const rows = (await owner.call<{ messages: Row[] }>('GET', '/messages?limit=200')).body.messages;
      return rows.length === 30 && rows.every((r) => r.state !== 'new');
    });

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { messages: Row[]; next_cursor: string | null } = (
        await owner.call<{ messages: Row[]; next_cursor: string | null }>(
          'GET',
          `/messages?limit=7${cursor ? `&cursor=${cursor}` : ''}`,
        )
      ).body;
      seen.push(...page.messages.map((m) => m.message_id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...stories].reverse().map((s) => s.id));

    const list = async (query: string) =>
      (await owner.call<{ messages: Row[] }>('GET', `/messages?limit=200&${query}`)).body.messages;
    expect((await list('state=failed')).map((r) => r.message_id).sort()).toEqual(
      stories
        .filter((_, i) => i % 5 === 0)
        .map((s) => s.id)
        .sort(),
    );
    expect((await list('error_code=CLIENT_NOT_FOUND')).length).toBe(3);
    expect((await list('phone=7916000')).length).toBe(10);
    expect((await list(`phone=%2B7 (916) 000-00-03`)).map((r) => r.phone)).toEqual(['79160000003']);
    const from = new Date(start.getTime() + 10 * 60_000).toISOString();
    const to = new Date(start.getTime() + 20 * 60_000).toISOString();
    expect((await list(`from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`)).length).toBe(10);
    expect((await list(`service=max`)).length).toBe(0);

    const bad = await owner.call<{ code: string; errors: { pointer: string }[] }>(
      'GET',
      '/messages?state=lost&cursor=nope&phone=abc',
    );
    expect([bad.status, bad.body.code]).toEqual([422, 'validation_failed']);
    expect(bad.body.errors.map((e) => e.pointer).sort()).toEqual(['#/cursor', '#/state']);
  });
});

describe('the overview', () => {
  it('counts outcomes by messenger and error code, per bot, with latency percentiles and the webhook success rate', async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Counts');
    const { botId } = await bot(stack, companyId);
    const stories = [
      messageStory({ companyId, botId, webhook: ['succeeded'] }),
      messageStory({ companyId, botId, webhook: ['retryable', 'succeeded'] }),
      messageStory({
        companyId,
        botId,
        outcome: { sent: false, errorCode: 'RATE_LIMITED_PAST_DEADLINE' },
        webhook: ['succeeded'],
      }),
    ];
    for (const s of stories) await publishStory(stack.publisher, s);
    const overview = await eventually('the overview', async () => {
      const o = (
        await owner.call<{
          totals: { sent: number; failed: number };
          errors: { error_code: string; count: number }[];
          latency: { p50: number; p99: number; count: number };
          bots: { bot_id: string; sent: number; failed: number; rate_limited: number }[];
          webhooks: { attempts: number; succeeded: number; success_rate: number };
          series: { telegram_sent: number; telegram_failed: number }[];
        }>('GET', '/overview?range=24h')
      ).body;
      return o.webhooks.attempts === 4 && o.totals.sent + o.totals.failed === 3 && o;
    });
    expect(overview.totals).toEqual({ sent: 2, failed: 1 });
    expect(overview.errors).toEqual([
      { error_code: 'RATE_LIMITED_PAST_DEADLINE', messenger: 'telegram', count: 1 },
    ]);
    // Every story's outcome comes 40 ms after its acceptance: the 50 ms bucket.
    expect(overview.latency).toMatchObject({ p50: 50, p99: 50, count: 3 });
    expect(overview.bots).toEqual([
      { bot_id: botId, messenger: 'telegram', sent: 2, failed: 1, rate_limited: 1 },
    ]);
    expect(overview.webhooks).toMatchObject({ attempts: 4, succeeded: 3, success_rate: 0.75 });
    expect(overview.series.reduce((n, s) => n + s.telegram_sent, 0)).toBe(2);
    expect((await owner.call('GET', '/overview?range=forever')).status).toBe(422);
  });
});

describe('API keys', () => {
  it('are made here, shown once, listed with who made them and when each was last used, and revoked', async () => {
    const { owner, companyId, email } = await companyWithOwner(stack, 'Keys');
    const created = await owner.call<{ key_id: string; api_key: string; prefix: string }>('POST', '/keys', {
      label: 'shop backend',
    });
    expect(created.status).toBe(201);
    expect(created.body.api_key).toMatch(/^mds_[a-z0-9]{12}_/);
    expect((await owner.call('POST', '/keys', { label: '' })).status).toBe(422);
    const { botId } = await bot(stack, companyId);
    await publishStory(stack.publisher, messageStory({ companyId, botId, apiKeyId: created.body.key_id }));
    const key = await eventually('the key used', async () => {
      const keys = (
        await owner.call<{
          keys: {
            key_id: string;
            last_used_at: string | null;
            created_by: { email: string };
            prefix: string;
            label: string;
          }[];
        }>('GET', '/keys')
      ).body.keys;
      const k = keys.find((x) => x.key_id === created.body.key_id);
      return k?.last_used_at ? k : undefined;
    });
    expect(key).toMatchObject({ label: 'shop backend', prefix: created.body.prefix, created_by: { email } });
    expect(JSON.stringify(await owner.call('GET', '/keys'))).not.toContain(created.body.api_key);
    expect((await owner.call('DELETE', `/keys/${created.body.key_id}`)).status).toBe(204);
    const revoked = (
      await owner.call<{ keys: { key_id: string; revoked_at: string | null }[] }>('GET', '/keys')
    ).body.keys;
    expect(revoked.find((k) => k.key_id === created.body.key_id)?.revoked_at).toBeTruthy();
    expect((await owner.call('DELETE', '/keys/nosuchkey123')).status).toBe(404);
  });
});

describe('bots', () => {
  it('are added once the messenger knows the token, and show what the log says of them', async () => {
    const { owner, companyId } = await companyWithOwner(stack, 'Bots');
    const sim = (await (
      await fetch(`${stack.simulator.url}/control/bots`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messenger: 'max', username: `m${randomUUID().slice(0, 6)}_bot` }),
      })
    ).json()) as { token: string };
    const refused = await owner.call<{ code: string }>('POST', '/bots', {
      messenger: 'max',
      name: 'shop',
      token: 'not-a-token-of-any-bot',
    });
    expect([refused.status, refused.body.code]).toEqual([422, 'invalid_bot_token']);
    const added = await owner.call<{ bot_id: string }>('POST', '/bots', {
      messenger: 'max',
      name: 'shop',
      token: sim.token,
      default: true,
    });
    expect(added.status).toBe(201);
    const botId = added.body.bot_id;
    await publishStory(stack.publisher, messageStory({ companyId, botId }));
    const update: Complete<BotUpdateEvent> = newEvent<BotUpdateEvent>({
      eventId: randomUUID(),
      occurredAt: new Date(),
      companyId,
      streamId: botId,
      producer: 'max-sender',
      event: {
        $case: 'personStartedBot',
        value: { chat: { messenger: 2, botId, chatId: '9', userId: '9' }, providerUpdateId: '1' },
      },
    });
    await stack.publisher.publish([{ topic: topics.botUpdate, key: botId, record: update }] as never);
    const listed = await eventually('the bot with its health', async () => {
      const b = (
        await owner.call<{
          bots: { bot_id: string; default: boolean; last_update_type: string; last_hour: { sent: number } }[];
        }>('GET', '/bots')
      ).body.bots[0];
      return b?.last_update_type && b.last_hour.sent === 1 ? b : undefined;
    });
    expect(listed).toMatchObject({ bot_id: botId, default: true, last_update_type: 'PersonStartedBot' });
    expect((await owner.call<{ ok: boolean }>('POST', `/bots/${botId}/check`)).body.ok).toBe(true);
    expect((await owner.call('DELETE', `/bots/${botId}`)).status).toBe(204);
    expect((await owner.call<{ bots: unknown[] }>('GET', '/bots')).body.bots).toEqual([]);
  });
});
