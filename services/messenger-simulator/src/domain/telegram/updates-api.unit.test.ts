import { describe, expect, it } from 'vitest';
import { act, person, telegramBot, testWorld } from '../../../test/world.js';
import { readPollRequest, takeUpdates } from './get-updates.js';
import { deleteWebhook, setWebhook, webhookInfo } from './webhook.js';

function botWithUpdates(count: number) {
  const t = testWorld();
  const bot = telegramBot(t.world);
  const ivan = person(t.world);
  act(t.world, ivan, bot, { type: 'start' });
  for (let i = 1; i < count; i++) act(t.world, ivan, bot, { type: 'send_text', text: `m${i}` });
  return { ...t, bot };
}

function poll(params: Record<string, unknown>) {
  const request = readPollRequest(params);
  if ('ok' in request) throw new Error(request.description);
  return request;
}

describe('getUpdates', () => {
  it('returns pending updates until a higher offset confirms them', () => {
    const { bot, now } = botWithUpdates(3);
    const all = takeUpdates(bot, poll({}), now());
    expect(all).toHaveLength(3);
    expect(takeUpdates(bot, poll({}), now())).toHaveLength(3);
    const ids = all.map((u) => u.update_id);
    expect(takeUpdates(bot, poll({ offset: ids[1]! }), now()).map((u) => u.update_id)).toEqual(ids.slice(1));
    expect(takeUpdates(bot, poll({ offset: String(ids[2]! + 1) }), now())).toEqual([]);
    expect(bot.updates.size).toBe(0);
  });

  it('a negative offset keeps only the last updates; limit is clamped to 1-100', () => {
    const { bot, now } = botWithUpdates(4);
    expect(poll({ limit: 0 }).limit).toBe(1);
    expect(poll({ limit: '500' }).limit).toBe(100);
    expect(takeUpdates(bot, poll({ limit: 2 }), now())).toHaveLength(2);
    expect(takeUpdates(bot, poll({ offset: -1 }), now())).toHaveLength(1);
    expect(bot.updates.size).toBe(1);
  });

  it('remembers allowed_updates (a JSON array, also as a string) and refuses one that is not JSON', () => {
    const { bot } = botWithUpdates(1);
    takeUpdates(bot, poll({ allowed_updates: '["message","no_such_type"]' }), 0);
    expect([...bot.allowedUpdates!]).toEqual(['message']);
    const bad = readPollRequest({ allowed_updates: '[message' });
    expect('ok' in bad && bad.error_code).toBe(400);
  });

  it('forgets updates older than 24 hours', () => {
    const { bot, now, advance } = botWithUpdates(2);
    advance(24 * 3_600_000 + 1);
    expect(takeUpdates(bot, poll({}), now())).toEqual([]);
  });
});

describe('webhooks', () => {
  const rules = { requireHttps: false };

  it('sets, re-sets and deletes with the Bot API descriptions', () => {
    const { bot } = botWithUpdates(1);
    expect(setWebhook(bot, { url: 'http://127.0.0.1:1/hook', secret_token: 'abc_DEF-1' }, rules)).toEqual({
      ok: true,
      result: true,
      description: 'Webhook was set',
    });
    expect(
      setWebhook(bot, { url: 'http://127.0.0.1:1/hook', secret_token: 'abc_DEF-1' }, rules),
    ).toMatchObject({
      description: 'Webhook is already set',
    });
    expect(webhookInfo(bot)).toEqual({
      url: 'http://127.0.0.1:1/hook',
      has_custom_certificate: false,
      pending_update_count: 1,
      max_connections: 40,
    });
    expect(deleteWebhook(bot, { drop_pending_updates: 'true' })).toMatchObject({
      description: 'Webhook was deleted',
    });
    expect(deleteWebhook(bot, {})).toMatchObject({ description: 'Webhook is already deleted' });
    expect(webhookInfo(bot)).toEqual({ url: '', has_custom_certificate: false, pending_update_count: 0 });
  });

  it('refuses a bad secret, a non-http URL, and plain http when HTTPS is required; an empty url deletes', () => {
    const { bot } = botWithUpdates(1);
    const description = (r: { ok: boolean; description?: string }) => r.description;
    expect(description(setWebhook(bot, { url: 'https://x.example', secret_token: 'has space' }, rules))).toBe(
      'Bad Request: secret token contains unallowed characters',
    );
    expect(description(setWebhook(bot, { url: 'ftp://x.example' }, rules))).toBe(
      'Bad Request: bad webhook: An HTTPS URL must be provided for webhook',
    );
    expect(description(setWebhook(bot, { url: 'http://x.example' }, { requireHttps: true }))).toBe(
      'Bad Request: bad webhook: An HTTPS URL must be provided for webhook',
    );
    setWebhook(bot, { url: 'https://x.example' }, rules);
    expect(description(setWebhook(bot, { url: '' }, rules))).toBe('Webhook was deleted');
    expect(bot.webhook).toBeUndefined();
  });
});
