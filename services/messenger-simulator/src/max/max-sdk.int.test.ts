// Fidelity: the official MAX SDK (@maxhub/max-bot-api) with its baseUrl pointed at the simulator sees
// the same results and the same MaxError fields as against platform-api2.max.ru.
import { Bot, Keyboard, MaxError } from '@maxhub/max-bot-api';
import { afterEach, describe, expect, it } from 'vitest';
import { HOSTILE_TEXT } from '../domain/hostile.js';
import { closeAll, reachablePerson, startSimulator, webhookReceiver } from '../../test/simulator.js';

afterEach(closeAll);

async function setup(env: Record<string, string> = {}) {
  const sim = await startSimulator(env);
  const view = await sim.control.createBot('max', 'shop', 'Shop');
  const bot = new Bot(view.token, { clientOptions: { baseUrl: sim.base } });
  return { sim, view, bot, api: bot.api };
}

async function maxError(call: Promise<unknown>) {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MaxError);
  const e = error as MaxError;
  return { status: e.status, code: e.code, description: e.description, message: e.message };
}

describe('the MAX SDK against the simulator', () => {
  it('a hostile-error fault: the SDK hands over what MAX said, NUL, broken bytes and a megabyte', async () => {
    const { sim, view, api } = await setup();
    const person = await reachablePerson(sim.control, view, '79123456789');
    const send = () => api.sendMessageToUser(person.max_user_id, 'x');
    await sim.control.addFault({ kind: 'hostile-error', bot_id: view.id, method: 'messages' });
    expect(await maxError(send())).toMatchObject({
      status: 400,
      code: 'proto.payload',
      description: HOSTILE_TEXT,
    });
    await sim.control.addFault({
      kind: 'hostile-error',
      bot_id: view.id,
      hostile: 'invalid-utf8',
      status: 500,
    });
    expect(await maxError(send())).toMatchObject({
      status: 500,
      code: 'internal.error',
      description: expect.stringMatching(/^broken \ufffd+ \ufffd+ bytes$/),
    });
    await sim.control.addFault({ kind: 'hostile-error', bot_id: view.id, hostile: 'huge', size: 1_000_000 });
    expect((await maxError(send())).description).toHaveLength(1_000_000);
    await sim.control.addFault({ kind: 'hostile-error', bot_id: view.id, hostile: 'not-json', status: 502 });
    expect(await send().catch((e: unknown) => e)).toBeInstanceOf(Error);
    expect((await send()).body.text).toBe('x');
  });

  it('getMyInfo is GET /me', async () => {
    const { view, api } = await setup();
    expect(await api.getMyInfo()).toMatchObject({
      user_id: view.id,
      name: 'Shop',
      username: 'shop',
      is_bot: true,
    });
  });

  it('sendMessageToUser with a link keyboard returns the message, and the person gets the button', async () => {
    const { sim, view, api } = await setup();
    const person = await reachablePerson(sim.control, view, '79123456789');
    const message = await api.sendMessageToUser(person.max_user_id, 'Your order has shipped', {
      attachments: [
        Keyboard.inlineKeyboard([[Keyboard.button.link('Track order', 'https://shop.example/o/1')]]),
      ],
    });
    expect(message).toMatchObject({
      recipient: { chat_id: person.chats[0]!.chat_id, chat_type: 'dialog', user_id: person.max_user_id },
      body: {
        mid: expect.stringMatching(/^mid\./) as string,
        text: 'Your order has shipped',
        attachments: [
          {
            type: 'inline_keyboard',
            payload: { buttons: [[{ type: 'link', text: 'Track order', url: 'https://shop.example/o/1' }]] },
          },
        ],
      },
    });
    const chat = await api.sendMessageToChat(person.chats[0]!.chat_id, 'By chat id');
    expect(chat.body.text).toBe('By chat id');
    expect((await sim.control.messages(person.id)).map((m) => m.text)).toEqual([
      'Your order has shipped',
      'By chat id',
    ]);
  });

  it('raises MaxError with status, code and description for unreachable recipients', async () => {
    const { sim, view, api } = await setup();
    const stopped = await reachablePerson(sim.control, view, '79990000001', 'Stopped');
    await sim.control.act(stopped.id, { action: 'stop', bot_id: view.id });
    const stranger = await sim.control.createPerson('79990000003', 'Stranger');
    const gone = await reachablePerson(sim.control, view, '79990000002', 'Gone');
    await sim.control.act(gone.id, { action: 'deactivate' });
    expect(await maxError(api.sendMessageToUser(gone.max_user_id, 'x'))).toMatchObject({
      status: 403,
      code: 'chat.denied',
    });
    expect(await maxError(api.sendMessageToUser(stopped.max_user_id, 'x'))).toEqual({
      status: 403,
      code: 'chat.denied',
      description: 'error.dialog.suspended',
      message: '403: error.dialog.suspended',
    });
    expect(await maxError(api.sendMessageToUser(stranger.max_user_id, 'x'))).toMatchObject({
      status: 403,
      code: 'chat.denied',
    });
    expect(await maxError(api.sendMessageToChat(424242, 'x'))).toEqual({
      status: 404,
      code: 'chat.not.found',
      description: 'Chat 424242 not found',
      message: '404: Chat 424242 not found',
    });
  });

  it('raises MaxError for invalid requests: text over 4000, a non-http link', async () => {
    const { sim, view, api } = await setup();
    const person = await reachablePerson(sim.control, view, '79123456789');
    expect(await maxError(api.sendMessageToUser(person.max_user_id, 'x'.repeat(4001)))).toMatchObject({
      status: 400,
      code: 'proto.payload',
      description: "Field 'text' size (4001) must be at most 4000",
    });
    const bad = Keyboard.inlineKeyboard([[Keyboard.button.link('Open', 'ftp://files.example/1')]]);
    expect(
      await maxError(api.sendMessageToUser(person.max_user_id, 'x', { attachments: [bad] })),
    ).toMatchObject({
      status: 400,
      code: 'proto.payload',
      description: 'Must have only http/https links format in buttons',
    });
  });

  it('raises MaxError 429 past the rate limit and 401 for a bad token', async () => {
    const { sim, api } = await setup({ MAX_BOT_RATE_PER_S: '0.1', MAX_BOT_BURST: '1' });
    await api.getMyInfo();
    expect(await maxError(api.getMyInfo())).toEqual({
      status: 429,
      code: 'too.many.requests',
      description: 'Too many requests',
      message: '429: Too many requests',
    });
    const stranger = new Bot('not-a-known-token-at-all', { clientOptions: { baseUrl: sim.base } });
    expect(await maxError(stranger.api.getMyInfo())).toEqual({
      status: 401,
      code: 'verify.token',
      description: 'Invalid access_token',
      message: '401: Invalid access_token',
    });
  });

  it('getUpdates with a marker, and subscribe / getSubscriptions / unsubscribe with the secret header', async () => {
    const { sim, view, api } = await setup();
    const person = await sim.control.createPerson('79123456789', 'Ivan');
    await sim.control.act(person.id, { action: 'start', bot_id: view.id, payload: 'co-7' });
    // The SDK drops falsy query values, so `timeout: 0` would not be sent (the default is 30 s).
    const first = await api.getUpdates([], { timeout: 1 });
    expect(first.updates).toEqual([expect.objectContaining({ update_type: 'bot_started', payload: 'co-7' })]);
    expect((await api.getUpdates([], { timeout: 1, marker: first.marker })).updates).toEqual([]);

    const hook = await webhookReceiver();
    try {
      expect(await api.subscribe(hook.url, 'sdk_secret', ['bot_stopped'])).toEqual({ success: true });
      expect(await api.getSubscriptions()).toEqual([
        { url: hook.url, time: expect.any(Number) as number, updateTypes: ['bot_stopped'] },
      ]);
      await sim.control.act(person.id, { action: 'share_contact', bot_id: view.id });
      await sim.control.act(person.id, { action: 'stop', bot_id: view.id });
      const [push] = await hook.waitFor(1);
      expect(push!.headers['x-max-bot-api-secret']).toBe('sdk_secret');
      expect(push!.body).toMatchObject({ update_type: 'bot_stopped', user: { user_id: person.max_user_id } });
      expect(hook.received).toHaveLength(1);
      expect(await api.unsubscribe(hook.url)).toEqual({ success: true });
      expect(await api.getSubscriptions()).toEqual([]);
    } finally {
      await hook.close();
    }
  });
});

describe('an SDK Bot long polling the simulator', () => {
  it('receives bot_started with the payload and the contact, which ctx.contactInfo parses', async () => {
    const { sim, view, bot } = await setup();
    const started: (string | null | undefined)[] = [];
    const contacts: { tel: string; fullName: string; own: boolean }[] = [];
    bot.on('bot_started', (ctx) => void started.push(ctx.update.payload));
    bot.on('message_created', (ctx) => {
      const info = ctx.contactInfo;
      const attachment = ctx.message?.body.attachments?.find((a) => a.type === 'contact');
      if (!info?.tel || !info.fullName || attachment?.type !== 'contact') return;
      contacts.push({
        tel: info.tel,
        fullName: info.fullName,
        own: attachment.payload.max_info?.user_id === ctx.message?.sender?.user_id,
      });
    });
    const running = bot.start();
    try {
      const ivan = await sim.control.createPerson('79123456789', 'Ivan', { last_name: 'Petrov' });
      const olga = await sim.control.createPerson('79990001122', 'Olga');
      await sim.control.act(ivan.id, { action: 'start', bot_id: view.id, payload: 'co-7' });
      await sim.control.act(ivan.id, { action: 'share_contact', bot_id: view.id, phone_format: 'plus' });
      await sim.control.act(ivan.id, {
        action: 'share_contact',
        bot_id: view.id,
        contact: { person_id: olga.id },
      });
      const deadline = Date.now() + 5000;
      while (contacts.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    } finally {
      bot.stop();
      await running;
    }
    expect(started).toEqual(['co-7']);
    expect(contacts).toEqual([
      { tel: '+79123456789', fullName: 'Ivan Petrov', own: true },
      { tel: '79990001122', fullName: 'Olga', own: false },
    ]);
  });
});
