import { afterEach, describe, expect, it } from 'vitest';
import {
  closeAll,
  getJson,
  postJson,
  reachablePerson,
  startSimulator,
  webhookReceiver,
  type BotView,
  type TestSimulator,
} from '../../test/simulator.js';

afterEach(closeAll);

async function withBot(env: Record<string, string> = {}) {
  const sim = await startSimulator(env);
  const bot = await sim.control.createBot('telegram', 'shop_bot', 'Shop');
  const api = (method: string) => `${sim.base}/bot${bot.token}/${method}`;
  return { sim, bot, api };
}

describe('URL shape and tokens', () => {
  it('serves /bot<token>/<method> by GET or POST, method names in any case', async () => {
    const { bot, api } = await withBot();
    const expected = {
      ok: true,
      result: expect.objectContaining({ id: bot.id, is_bot: true, username: 'shop_bot' }),
    };
    expect(await getJson(api('getMe'))).toMatchObject({ status: 200, body: expected });
    expect(await postJson(api('GETME'), {})).toMatchObject({ status: 200, body: expected });
    expect((await getJson(api('getme'))).body).toEqual((await getJson(api('getMe'))).body);
  });

  it('answers 404 Not Found for a malformed token or an unknown method, 401 for an unknown well-formed token', async () => {
    const { sim, bot, api } = await withBot();
    const notFound = { ok: false, error_code: 404, description: 'Not Found' };
    const unauthorized = { ok: false, error_code: 401, description: 'Unauthorized' };
    expect(await getJson(`${sim.base}/botnot-a-token/getMe`)).toMatchObject({ status: 404, body: notFound });
    expect(await getJson(`${sim.base}/bot/getMe`)).toMatchObject({ status: 404, body: notFound });
    expect(await getJson(api('noSuchMethod'))).toMatchObject({ status: 404, body: notFound });
    const wrong = `${bot.id}:AA${'x'.repeat(33)}`;
    expect(await getJson(`${sim.base}/bot${wrong}/getMe`)).toMatchObject({ status: 401, body: unauthorized });
    await sim.control.call('DELETE', `/bots/${bot.id}`);
    expect(await getJson(api('getMe'))).toMatchObject({ status: 401, body: unauthorized });
  });
});

describe('sendMessage parameters', () => {
  async function setup() {
    const ctx = await withBot({ TELEGRAM_CHAT_BURST: '50' });
    const person = await reachablePerson(ctx.sim.control, ctx.bot, '79123456789');
    return { ...ctx, chatId: person.telegram_user_id, person };
  }
  const keyboard = { inline_keyboard: [[{ text: 'Open', url: 'https://shop.example/o/1' }]] };
  const sent = { ok: true, result: expect.objectContaining({ text: 'Hello', reply_markup: keyboard }) };

  it('takes a JSON body with reply_markup as an object', async () => {
    const { api, chatId } = await setup();
    expect(
      await postJson(api('sendMessage'), { chat_id: chatId, text: 'Hello', reply_markup: keyboard }),
    ).toMatchObject({
      status: 200,
      body: sent,
    });
  });

  it('takes a form-encoded body with reply_markup as a JSON string', async () => {
    const { api, chatId } = await setup();
    const res = await fetch(api('sendMessage'), {
      method: 'POST',
      body: new URLSearchParams({
        chat_id: String(chatId),
        text: 'Hello',
        reply_markup: JSON.stringify(keyboard),
      }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject(sent);
  });

  it('takes the query string, and a multipart body', async () => {
    const { api, chatId } = await setup();
    const query = new URLSearchParams({
      chat_id: String(chatId),
      text: 'Hello',
      reply_markup: JSON.stringify(keyboard),
    });
    expect(await getJson(`${api('sendMessage')}?${query}`)).toMatchObject({ status: 200, body: sent });
    const form = new FormData();
    form.set('chat_id', String(chatId));
    form.set('text', 'Hello');
    form.set('reply_markup', JSON.stringify(keyboard));
    const res = await fetch(api('sendMessage'), { method: 'POST', body: form });
    expect(await res.json()).toMatchObject(sent);
  });

  it('the person receives the message with its link button', async () => {
    const { sim, api, chatId, person } = await setup();
    await postJson(api('sendMessage'), { chat_id: chatId, text: 'Hello', reply_markup: keyboard });
    expect(await sim.control.messages(person.id)).toEqual([
      expect.objectContaining({
        messenger: 'telegram',
        chat_id: chatId,
        message_id: 3,
        text: 'Hello',
        format: null,
        buttons: [[{ text: 'Open', url: 'https://shop.example/o/1' }]],
      }),
    ]);
  });

  it('answers every error with the HTTP status equal to error_code', async () => {
    const { sim, bot, api, chatId } = await setup();
    const blocked = await reachablePerson(sim.control, bot, '79990000001', 'Blocked');
    await sim.control.act(blocked.id, { action: 'block', bot_id: bot.id });
    const gone = await reachablePerson(sim.control, bot, '79990000002', 'Gone');
    await sim.control.act(gone.id, { action: 'deactivate' });
    const stranger = await sim.control.createPerson('79990000003', 'Stranger');
    const cases: [Record<string, unknown>, number, string][] = [
      [{ chat_id: blocked.telegram_user_id, text: 'x' }, 403, 'Forbidden: bot was blocked by the user'],
      [{ chat_id: gone.telegram_user_id, text: 'x' }, 403, 'Forbidden: user is deactivated'],
      [
        { chat_id: stranger.telegram_user_id, text: 'x' },
        403,
        "Forbidden: bot can't initiate conversation with a user",
      ],
      [{ chat_id: 42, text: 'x' }, 400, 'Bad Request: chat not found'],
      [{ chat_id: chatId, text: 'x'.repeat(4097) }, 400, 'Bad Request: message is too long'],
      [{ chat_id: chatId, text: '' }, 400, 'Bad Request: message text is empty'],
      [
        {
          chat_id: chatId,
          text: 'x',
          reply_markup: { inline_keyboard: [[{ text: 'a', url: 'file:///etc/passwd' }]] },
        },
        400,
        'Bad Request: BUTTON_URL_INVALID',
      ],
    ];
    for (const [params, status, description] of cases) {
      const res = await postJson(api('sendMessage'), params);
      expect({ status: res.status, body: res.body }).toEqual({
        status,
        body: { ok: false, error_code: status, description },
      });
    }
  });
});

describe('rate limits', () => {
  it('about 1 message per second per chat with a short burst, then 429 with retry_after; the next second it goes on', async () => {
    const { sim, bot, api } = await withBot({ TELEGRAM_CHAT_BURST: '2' });
    const person = await reachablePerson(sim.control, bot, '79123456789');
    const send = () => postJson(api('sendMessage'), { chat_id: person.telegram_user_id, text: 'x' });
    expect((await send()).status).toBe(200);
    expect((await send()).status).toBe(200);
    const refused = await send();
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      ok: false,
      error_code: 429,
      description: 'Too Many Requests: retry after 1',
      parameters: { retry_after: 1 },
    });
    await new Promise((r) => setTimeout(r, 1000));
    expect((await send()).status).toBe(200);
  });

  it('a bot-wide bucket across chats: after its burst every chat gets 429', async () => {
    // The 30-per-second arithmetic is unit-tested on a hand-driven clock; here a slow refill makes
    // the wall clock irrelevant.
    const { sim, bot, api } = await withBot({ TELEGRAM_BOT_RATE_PER_S: '0.1', TELEGRAM_BOT_BURST: '5' });
    const people = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        reachablePerson(sim.control, bot, `7912000${String(i).padStart(4, '0')}`),
      ),
    );
    const statuses = [];
    for (const p of people)
      statuses.push((await postJson(api('sendMessage'), { chat_id: p.telegram_user_id, text: 'x' })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    const refused = await postJson(api('sendMessage'), { chat_id: people[0]!.telegram_user_id, text: 'x' });
    const retryAfter = (refused.body.parameters as { retry_after: number }).retry_after;
    expect(retryAfter === 9 || retryAfter === 10).toBe(true);
  });

  it('can be turned off', async () => {
    const { sim, bot, api } = await withBot({ RATE_LIMITS_ENABLED: 'false' });
    const person = await reachablePerson(sim.control, bot, '79123456789');
    for (let i = 0; i < 10; i++) {
      expect(
        (await postJson(api('sendMessage'), { chat_id: person.telegram_user_id, text: 'x' })).status,
      ).toBe(200);
    }
  });
});

describe('getUpdates', () => {
  it('returns the updates a person produced and confirms them with offset', async () => {
    const { sim, bot, api } = await withBot();
    const person = await reachablePerson(sim.control, bot, '79123456789');
    const first = await getJson(api('getUpdates'));
    const updates = first.body.result as {
      update_id: number;
      message: { text?: string; contact?: unknown };
    }[];
    expect(updates.map((u) => u.message.text ?? 'contact')).toEqual(['/start', 'contact']);
    expect(updates[1]!.message.contact).toEqual({
      phone_number: '79123456789',
      first_name: 'Ivan',
      user_id: person.telegram_user_id,
    });
    const next = await getJson(`${api('getUpdates')}?offset=${updates[1]!.update_id + 1}`);
    expect(next.body).toEqual({ ok: true, result: [] });
  });

  it('a long poll returns as soon as an update arrives', async () => {
    const { sim, bot, api } = await withBot();
    const person = await sim.control.createPerson('79123456789', 'Ivan');
    const started = Date.now();
    const poll = getJson(`${api('getUpdates')}?timeout=10`);
    await new Promise((r) => setTimeout(r, 200));
    await sim.control.act(person.id, { action: 'start', bot_id: bot.id, payload: 'abc' });
    const res = await poll;
    expect(Date.now() - started).toBeLessThan(3000);
    expect((res.body.result as { message: { text: string } }[])[0]!.message.text).toBe('/start abc');
  });

  it('a long poll with nothing to return answers [] after its timeout', async () => {
    const { api } = await withBot();
    const started = Date.now();
    expect((await getJson(`${api('getUpdates')}?timeout=1`)).body).toEqual({ ok: true, result: [] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('a second poller ends the first with 409; a webhook makes getUpdates 409', async () => {
    const { api } = await withBot();
    const first = getJson(`${api('getUpdates')}?timeout=10`);
    await new Promise((r) => setTimeout(r, 150));
    const second = getJson(`${api('getUpdates')}?timeout=1`);
    expect(await first).toEqual(
      expect.objectContaining({
        status: 409,
        body: {
          ok: false,
          error_code: 409,
          description:
            'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
        },
      }),
    );
    await second;
    const polling = getJson(`${api('getUpdates')}?timeout=10`);
    await new Promise((r) => setTimeout(r, 150));
    await postJson(api('setWebhook'), { url: 'http://127.0.0.1:9/hook' });
    expect((await polling).body).toEqual({
      ok: false,
      error_code: 409,
      description: 'Conflict: terminated by other long poll or webhook',
    });
    expect(await getJson(api('getUpdates'))).toMatchObject({
      status: 409,
      body: {
        error_code: 409,
        description:
          "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      },
    });
  });
});

describe('webhook', () => {
  async function hooked(statuses: number[] = [], secret = 'my-secret_1') {
    const ctx = await withBot();
    const hook = await webhookReceiver(statuses);
    const set = await postJson(ctx.api('setWebhook'), { url: hook.url, secret_token: secret });
    expect(set.body).toEqual({ ok: true, result: true, description: 'Webhook was set' });
    return { ...ctx, hook };
  }

  it('pushes updates as JSON with X-Telegram-Bot-Api-Secret-Token', async () => {
    const { sim, bot, hook } = await hooked();
    try {
      const person = await sim.control.createPerson('79123456789', 'Ivan');
      await sim.control.act(person.id, { action: 'start', bot_id: bot.id });
      const [push] = await hook.waitFor(1);
      expect(push!.headers['x-telegram-bot-api-secret-token']).toBe('my-secret_1');
      expect(push!.headers['content-type']).toBe('application/json');
      expect(push!.body).toMatchObject({
        update_id: expect.any(Number) as number,
        message: { text: '/start' },
      });
    } finally {
      await hook.close();
    }
  });

  it('retries a push that got a non-2xx answer, and getWebhookInfo tells the last error', async () => {
    const { sim, bot, api, hook } = await hooked([500]);
    try {
      const person = await sim.control.createPerson('79123456789', 'Ivan');
      await sim.control.act(person.id, { action: 'start', bot_id: bot.id });
      const pushes = await hook.waitFor(2);
      expect(pushes[1]!.body).toEqual(pushes[0]!.body);
      const info = await getJson(api('getWebhookInfo'));
      expect(info.body.result).toMatchObject({
        url: hook.url,
        pending_update_count: 0,
        last_error_message: 'Wrong response from the webhook: 500 Internal Server Error',
      });
    } finally {
      await hook.close();
    }
  });

  it('drops an update after the last retry and goes on with the next one', async () => {
    const { sim, bot, api, hook } = await hooked([500, 500, 500]);
    try {
      const person = await sim.control.createPerson('79123456789', 'Ivan');
      await sim.control.act(person.id, { action: 'start', bot_id: bot.id });
      await hook.waitFor(3);
      await sim.control.act(person.id, { action: 'send_text', bot_id: bot.id, text: 'second' });
      const pushes = await hook.waitFor(4);
      const texts = pushes.map((p) => (p.body as { message: { text: string } }).message.text);
      expect(texts).toEqual(['/start', '/start', '/start', 'second']);
      expect((await getJson(api('getWebhookInfo'))).body.result).toMatchObject({ pending_update_count: 0 });
    } finally {
      await hook.close();
    }
  });

  it('keeps updates for getUpdates after deleteWebhook when the receiver was down', async () => {
    const ctx = await withBot();
    await postJson(ctx.api('setWebhook'), { url: 'http://127.0.0.1:1/unreachable' });
    await postJson(ctx.api('deleteWebhook'), {});
    const person = await ctx.sim.control.createPerson('79123456789', 'Ivan');
    await ctx.sim.control.act(person.id, { action: 'start', bot_id: ctx.bot.id });
    expect((await getJson(ctx.api('getUpdates'))).body.result).toHaveLength(1);
  });

  it('refuses a secret token with characters outside A-Z a-z 0-9 _ -', async () => {
    const { api } = await withBot();
    expect(
      await postJson(api('setWebhook'), { url: 'https://x.example', secret_token: 'bad secret' }),
    ).toMatchObject({
      status: 400,
      body: {
        ok: false,
        error_code: 400,
        description: 'Bad Request: secret token contains unallowed characters',
      },
    });
  });
});

describe('faults', () => {
  async function setup(): Promise<{
    sim: TestSimulator;
    bot: BotView;
    api: (m: string) => string;
    chatId: number;
  }> {
    const ctx = await withBot({ RATE_LIMITS_ENABLED: 'false' });
    const person = await reachablePerson(ctx.sim.control, ctx.bot, '79123456789');
    return { ...ctx, chatId: person.telegram_user_id };
  }

  it('5xx and forced 429 answer the next calls of the chosen method, then stop', async () => {
    const { sim, bot, api, chatId } = await setup();
    await sim.control.addFault({ kind: '5xx', bot_id: bot.id, method: 'sendMessage', status: 502 });
    await sim.control.addFault({ kind: '429', bot_id: bot.id, method: 'sendMessage', retry_after: 7 });
    expect((await getJson(api('getMe'))).status).toBe(200);
    const send = () => postJson(api('sendMessage'), { chat_id: chatId, text: 'x' });
    expect(await send()).toMatchObject({
      status: 502,
      body: { ok: false, error_code: 502, description: 'Bad Gateway' },
    });
    expect(await send()).toMatchObject({
      status: 429,
      body: {
        ok: false,
        error_code: 429,
        description: 'Too Many Requests: retry after 7',
        parameters: { retry_after: 7 },
      },
    });
    expect((await send()).status).toBe(200);
  });

  it('latency delays the answer; timeout holds the call and drops the connection', async () => {
    const { sim, api } = await setup();
    await sim.control.addFault({ kind: 'latency', ms: 400 });
    const started = Date.now();
    expect((await getJson(api('getMe'))).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    await sim.control.addFault({ kind: 'timeout', ms: 300 });
    await expect(fetch(api('getMe'))).rejects.toThrow();
    expect((await getJson(api('getMe'))).status).toBe(200);
  });

  it('a held call does not keep the simulator from stopping', async () => {
    const { sim, api } = await setup();
    await sim.control.addFault({ kind: 'timeout', ms: 60_000 });
    const held = fetch(api('getMe')).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await sim.close();
    expect(Date.now() - started).toBeLessThan(2000);
    expect(await held).toBeInstanceOf(Error);
  });
});

describe('request log', () => {
  it('records the exact parameters of each call for tests to assert on', async () => {
    const { sim, bot, api } = await withBot();
    await postJson(api('sendMessage'), { chat_id: 42, text: 'hi', reply_markup: { inline_keyboard: [] } });
    const { requests } = await sim.control.call<{ requests: Record<string, unknown>[] }>(
      'GET',
      `/requests?bot_id=${bot.id}`,
    );
    expect(requests.at(-1)).toMatchObject({
      messenger: 'telegram',
      bot_id: bot.id,
      method: 'sendMessage',
      params: { chat_id: 42, text: 'hi', reply_markup: { inline_keyboard: [] } },
      status: 400,
      error: 'Bad Request: chat not found',
    });
  });
});
