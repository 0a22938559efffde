import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  closeAll,
  getJson,
  postJson,
  reachablePerson,
  startSimulator,
  webhookReceiver,
} from '../../test/simulator.js';

afterEach(closeAll);

async function setup(env: Record<string, string> = {}) {
  const sim = await startSimulator(env);
  const bot = await sim.control.createBot('max', 'shop', 'Shop');
  const auth = { Authorization: bot.token };
  return { sim, bot, auth };
}

const link = (url: string) => [
  { type: 'inline_keyboard', payload: { buttons: [[{ type: 'link', text: 'Open', url }]] } },
];

describe('authentication', () => {
  it('takes the raw token from the Authorization header only', async () => {
    const { sim, bot, auth } = await setup();
    const invalid = { code: 'verify.token', message: 'Invalid access_token' };
    expect(await getJson(`${sim.base}/me`, auth)).toMatchObject({
      status: 200,
      body: { user_id: bot.id, name: 'Shop', username: 'shop', is_bot: true },
    });
    expect(await getJson(`${sim.base}/me`)).toEqual(expect.objectContaining({ status: 401, body: invalid }));
    expect(await getJson(`${sim.base}/me?access_token=${bot.token}`)).toEqual(
      expect.objectContaining({ status: 401, body: invalid }),
    );
    expect(await getJson(`${sim.base}/me`, { Authorization: `Bearer ${bot.token}` })).toMatchObject({
      status: 401,
    });
    expect(await getJson(`${sim.base}/me`, { Authorization: 'unknown-token-unknown' })).toMatchObject({
      status: 401,
    });
  });

  it('a Telegram token is no MAX token, and the other way round', async () => {
    const { sim, bot } = await setup();
    const tg = await sim.control.createBot('telegram', 'shop_bot');
    expect((await getJson(`${sim.base}/me`, { Authorization: tg.token })).status).toBe(401);
    expect((await getJson(`${sim.base}/bot${bot.token}/getMe`)).status).toBe(404);
  });
});

describe('POST /messages', () => {
  it('sends to ?user_id= and to ?chat_id=, and the person gets the link button', async () => {
    const { sim, bot, auth } = await setup();
    const person = await reachablePerson(sim.control, bot, '79123456789');
    const chatId = person.chats[0]!.chat_id;
    const byUser = await postJson(
      `${sim.base}/messages?user_id=${person.max_user_id}`,
      { text: 'Hello', attachments: link('https://shop.example') },
      auth,
    );
    expect(byUser.status).toBe(200);
    expect(byUser.body.message).toMatchObject({
      recipient: { chat_id: chatId, chat_type: 'dialog', user_id: person.max_user_id },
      body: { text: 'Hello', attachments: link('https://shop.example') },
    });
    const byChat = await postJson(`${sim.base}/messages?chat_id=${chatId}`, { text: 'Again' }, auth);
    expect(byChat.status).toBe(200);
    const received = await sim.control.messages(person.id);
    expect(received.map((m) => [m.text, m.buttons])).toEqual([
      ['Hello', [[{ text: 'Open', url: 'https://shop.example' }]]],
      ['Again', []],
    ]);
  });

  it('answers each error with its status and {code, message}', async () => {
    const { sim, bot, auth } = await setup({ RATE_LIMITS_ENABLED: 'false' });
    const person = await reachablePerson(sim.control, bot, '79123456789');
    const stopped = await reachablePerson(sim.control, bot, '79990000001', 'Stopped');
    await sim.control.act(stopped.id, { action: 'stop', bot_id: bot.id });
    const gone = await reachablePerson(sim.control, bot, '79990000002', 'Gone');
    await sim.control.act(gone.id, { action: 'deactivate' });
    const send = (query: string, body: unknown) => postJson(`${sim.base}/messages?${query}`, body, auth);
    const cases: [string, unknown, number, { code: string; message: string }][] = [
      [
        `user_id=${stopped.max_user_id}`,
        { text: 'x' },
        403,
        { code: 'chat.denied', message: 'error.dialog.suspended' },
      ],
      [
        `user_id=${gone.max_user_id}`,
        { text: 'x' },
        403,
        { code: 'chat.denied', message: 'error.dialog.suspended' },
      ],
      ['chat_id=777', { text: 'x' }, 404, { code: 'chat.not.found', message: 'Chat 777 not found' }],
      [
        `user_id=${person.max_user_id}`,
        { text: 'x'.repeat(4001) },
        400,
        { code: 'proto.payload', message: "Field 'text' size (4001) must be at most 4000" },
      ],
      [
        `user_id=${person.max_user_id}`,
        { text: 'x', attachments: link('mailto:a@b.example') },
        400,
        { code: 'proto.payload', message: 'Must have only http/https links format in buttons' },
      ],
    ];
    for (const [query, body, status, error] of cases) {
      const res = await send(query, body);
      expect({ status: res.status, body: res.body }).toEqual({ status, body: error });
    }
    const res = await fetch(`${sim.base}/messages?user_id=${person.max_user_id}`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"text":',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ code: 'proto.payload', message: 'Request body is not valid JSON' });
  });

  it('counts every request of a bot in one bucket (30 rps by default); past it 429 with no retry hint', async () => {
    const { sim, auth } = await setup({ MAX_BOT_RATE_PER_S: '0.1', MAX_BOT_BURST: '3' });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await getJson(`${sim.base}/me`, auth)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const refused = await getJson(`${sim.base}/me`, auth);
    expect(refused.body).toEqual({ code: 'too.many.requests', message: 'Too many requests' });
    expect(refused.headers.get('retry-after')).toBeNull();
  });

  it('rejects other HTTP methods with 405', async () => {
    const { sim, auth } = await setup();
    const res = await fetch(`${sim.base}/messages`, { method: 'PUT', headers: auth });
    expect(res.status).toBe(405);
  });
});

describe('GET /updates', () => {
  it('returns bot_started, the contact and bot_stopped with a marker that confirms them', async () => {
    const { sim, bot, auth } = await setup();
    const person = await reachablePerson(sim.control, bot, '79123456789');
    await sim.control.act(person.id, { action: 'stop', bot_id: bot.id });
    const first = await getJson(`${sim.base}/updates?timeout=0`, auth);
    const updates = first.body.updates as {
      update_type: string;
      message?: { body: { attachments: { payload: Record<string, string> }[] } };
    }[];
    expect(updates.map((u) => u.update_type)).toEqual(['bot_started', 'message_created', 'bot_stopped']);
    const contact = updates[1]!.message!.body.attachments[0]!.payload;
    expect(contact.vcf_info).toContain('TEL;TYPE=cell:79123456789');
    expect(contact.hash).toBe(createHmac('sha256', bot.token).update(contact.vcf_info!).digest('hex'));
    const next = await getJson(`${sim.base}/updates?timeout=0&marker=${String(first.body.marker)}`, auth);
    expect(next.body).toEqual({ updates: [], marker: first.body.marker });
  });

  it('a long poll returns as soon as an update arrives; timeout over 90 is refused', async () => {
    const { sim, bot, auth } = await setup();
    const person = await sim.control.createPerson('79123456789', 'Ivan');
    const started = Date.now();
    const poll = getJson(`${sim.base}/updates?timeout=20`, auth);
    await new Promise((r) => setTimeout(r, 200));
    await sim.control.act(person.id, { action: 'start', bot_id: bot.id, payload: 'co-7' });
    const res = await poll;
    expect(Date.now() - started).toBeLessThan(3000);
    expect(res.body.updates).toEqual([
      expect.objectContaining({ update_type: 'bot_started', payload: 'co-7' }),
    ]);
    expect(await getJson(`${sim.base}/updates?timeout=91`, auth)).toMatchObject({
      status: 400,
      body: { code: 'proto.payload', message: "Field 'timeout' value (91) must be at most 90" },
    });
  });
});

describe('subscriptions', () => {
  it('pushes updates with X-Max-Bot-Api-Secret, retries until exactly 200, and long polling then gets nothing', async () => {
    const { sim, bot, auth } = await setup();
    const hook = await webhookReceiver([503, 204]);
    try {
      const subscribed = await postJson(
        `${sim.base}/subscriptions`,
        { url: hook.url, secret: 'max_secret-1' },
        auth,
      );
      expect(subscribed).toMatchObject({ status: 200, body: { success: true } });
      expect((await getJson(`${sim.base}/subscriptions`, auth)).body).toEqual({
        subscriptions: [{ url: hook.url, time: expect.any(Number) as number, update_types: [] }],
      });
      const person = await sim.control.createPerson('79123456789', 'Ivan');
      await sim.control.act(person.id, { action: 'start', bot_id: bot.id });
      const pushes = await hook.waitFor(3);
      expect(pushes.map((p) => p.headers['x-max-bot-api-secret'])).toEqual([
        'max_secret-1',
        'max_secret-1',
        'max_secret-1',
      ]);
      expect(pushes.every((p) => (p.body as { update_type: string }).update_type === 'bot_started')).toBe(
        true,
      );
      expect((await getJson(`${sim.base}/updates?timeout=0`, auth)).body.updates).toEqual([]);
      const res = await fetch(`${sim.base}/subscriptions?url=${encodeURIComponent(hook.url)}`, {
        method: 'DELETE',
        headers: auth,
      });
      expect(await res.json()).toEqual({ success: true });
      expect((await getJson(`${sim.base}/subscriptions`, auth)).body).toEqual({ subscriptions: [] });
    } finally {
      await hook.close();
    }
  });

  it('refuses a secret outside ^[a-zA-Z0-9_-]{5,256}$', async () => {
    const { sim, auth } = await setup();
    expect(
      await postJson(`${sim.base}/subscriptions`, { url: 'https://hook.example', secret: 'abc' }, auth),
    ).toMatchObject({
      status: 400,
      body: { code: 'proto.payload' },
    });
  });
});

describe('faults', () => {
  it('5xx, forced 429 and latency apply to the MAX endpoints they name', async () => {
    const { sim, bot, auth } = await setup();
    await sim.control.addFault({ kind: '5xx', bot_id: bot.id, method: 'me' });
    await sim.control.addFault({ kind: '429', messenger: 'max', method: 'me' });
    expect(await getJson(`${sim.base}/me`, auth)).toMatchObject({
      status: 503,
      body: { code: 'service.unavailable' },
    });
    expect(await getJson(`${sim.base}/me`, auth)).toMatchObject({
      status: 429,
      body: { code: 'too.many.requests' },
    });
    expect((await getJson(`${sim.base}/me`, auth)).status).toBe(200);
  });
});
