import { describe, expect, it } from 'vitest';
import { act, maxBot, person, testWorld } from '../../../test/world.js';
import { isMaxError } from './errors.js';
import { listSubscriptions, readPollRequest, subscribe, takeUpdates, unsubscribe } from './updates-api.js';

function setup() {
  const t = testWorld();
  const bot = maxBot(t.world);
  const ivan = person(t.world);
  act(t.world, ivan, bot, { type: 'start' });
  act(t.world, ivan, bot, { type: 'share_contact', contact: { kind: 'own' }, withPlus: false });
  act(t.world, ivan, bot, { type: 'stop' });
  return { ...t, bot, ivan };
}

function poll(query: Record<string, string>) {
  const request = readPollRequest(query);
  if ('body' in request) throw new Error(request.body.message);
  return request;
}

const types = (r: { updates: { update_type: string }[] }) => r.updates.map((u) => u.update_type);

describe('GET /updates', () => {
  it('answers {updates, marker}; the marker confirms what came before it', () => {
    const { bot, now } = setup();
    const first = takeUpdates(bot, poll({ limit: '2' }), now());
    expect(types(first)).toEqual(['bot_started', 'message_created']);
    const second = takeUpdates(bot, poll({ marker: String(first.marker) }), now());
    expect(types(second)).toEqual(['bot_stopped']);
    expect(bot.updates.size).toBe(1);
    const again = takeUpdates(bot, poll({ marker: String(first.marker) }), now());
    expect(types(again)).toEqual(['bot_stopped']);
    const done = takeUpdates(bot, poll({ marker: String(second.marker) }), now());
    expect(done).toEqual({ updates: [], marker: second.marker });
    expect(bot.updates.size).toBe(0);
  });

  it('without a marker gives only what was not given before', () => {
    const { bot, now, world, ivan } = setup();
    expect(types(takeUpdates(bot, poll({}), now()))).toHaveLength(3);
    expect(takeUpdates(bot, poll({ marker: 'null' }), now()).updates).toEqual([]);
    act(world, ivan, bot, { type: 'start' });
    expect(types(takeUpdates(bot, poll({}), now()))).toEqual(['bot_started']);
  });

  it('filters by types and moves the marker past the other types', () => {
    const { bot, now } = setup();
    const only = takeUpdates(bot, poll({ types: 'bot_stopped,bot_started' }), now());
    expect(types(only)).toEqual(['bot_started', 'bot_stopped']);
    expect(only.marker).toBe(bot.updates.nextId);
  });

  it('refuses a timeout over 90 s and a limit outside 1-1000, as proto.payload', () => {
    const message = (query: Record<string, string>) => {
      const r = readPollRequest(query);
      return 'body' in r ? `${r.status} ${r.body.code} ${r.body.message}` : 'ok';
    };
    expect(message({ timeout: '1500' })).toBe(
      "400 proto.payload Field 'timeout' value (1500) must be at most 90",
    );
    expect(message({ limit: '0' })).toBe("400 proto.payload Field 'limit' value (0) must be at least 1");
    expect(message({ limit: '1001' })).toBe(
      "400 proto.payload Field 'limit' value (1001) must be at most 1000",
    );
    expect(message({ marker: 'abc' })).toBe("400 proto.payload Field 'marker' value (abc) must be a number");
    expect(readPollRequest({})).toEqual({ marker: undefined, limit: 100, timeoutS: 30, types: undefined });
  });
});

describe('subscriptions', () => {
  it('subscribes, replaces the same URL, lists and unsubscribes', () => {
    const { bot, now } = setup();
    expect(subscribe(bot, { url: 'https://hook.example/a', secret: 'secret_1' }, now(), false)).toEqual({
      status: 200,
      body: { success: true },
    });
    subscribe(bot, { url: 'https://hook.example/a', update_types: ['bot_started'] }, now(), false);
    subscribe(bot, { url: 'http://127.0.0.1:9/b' }, now(), false);
    expect(listSubscriptions(bot)).toEqual({
      subscriptions: [
        { url: 'https://hook.example/a', time: now(), update_types: ['bot_started'] },
        { url: 'http://127.0.0.1:9/b', time: now(), update_types: [] },
      ],
    });
    expect(unsubscribe(bot, 'https://hook.example/a')).toEqual({ status: 200, body: { success: true } });
    expect(bot.subscriptions.map((s) => s.url)).toEqual(['http://127.0.0.1:9/b']);
  });

  it('validates the secret, the URL and the update types', () => {
    const { bot, now } = setup();
    const message = (body: unknown, https = false) => {
      const r = subscribe(bot, body, now(), https);
      return isMaxError(r) ? r.body.message : 'ok';
    };
    expect(message({ url: 'https://hook.example', secret: 'abc' })).toBe(
      "Field 'secret' must match ^[a-zA-Z0-9_-]{5,256}$",
    );
    expect(message({ url: 'https://hook.example', secret: 'has space!' })).toBe(
      "Field 'secret' must match ^[a-zA-Z0-9_-]{5,256}$",
    );
    expect(message({})).toBe("Field 'url' is required");
    expect(message({ url: 'hook.example' })).toBe("Field 'url' must be an http(s) URL");
    expect(message({ url: 'http://hook.example' }, true)).toBe('Webhook URL must use HTTPS');
    expect(message({ url: 'https://hook.example', update_types: ['nope'] })).toBe(
      "Field 'update_types' must be a list of update types",
    );
    expect(bot.subscriptions).toEqual([]);
  });
});
