// Fidelity: grammY, the Telegram client library, pointed at the simulator with a custom apiRoot sees
// the same results and the same GrammyError fields as against api.telegram.org.
import { Api, Bot, GrammyError, HttpError, InlineKeyboard } from 'grammy';
import { afterEach, describe, expect, it } from 'vitest';
import { HOSTILE_TEXT } from '../domain/hostile.js';
import { closeAll, reachablePerson, startSimulator, webhookReceiver } from '../../test/simulator.js';

afterEach(closeAll);

async function setup(env: Record<string, string> = {}) {
  const sim = await startSimulator(env);
  const bot = await sim.control.createBot('telegram', 'shop_bot', 'Shop');
  const api = new Api(bot.token, { apiRoot: sim.base });
  return { sim, bot, api };
}

async function grammyError(call: Promise<unknown>): Promise<GrammyError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GrammyError);
  return error as GrammyError;
}

const fields = (e: GrammyError) => ({
  error_code: e.error_code,
  description: e.description,
  parameters: e.parameters,
});

describe('grammY Api against the simulator', () => {
  it('getMe returns the bot user', async () => {
    const { bot, api } = await setup();
    expect(await api.getMe()).toEqual({
      id: bot.id,
      is_bot: true,
      first_name: 'Shop',
      username: 'shop_bot',
      can_join_groups: true,
      can_read_all_group_messages: false,
      supports_inline_queries: false,
      can_connect_to_business: false,
      has_main_web_app: false,
    });
  });

  it('sendMessage with an inline URL keyboard returns the Message, and the person gets the button', async () => {
    const { sim, bot, api } = await setup();
    const person = await reachablePerson(sim.control, bot, '79123456789');
    const keyboard = new InlineKeyboard().url('Track order', 'https://shop.example/o/1');
    const message = await api.sendMessage(person.telegram_user_id, 'Your order has shipped', {
      reply_markup: keyboard,
      link_preview_options: { is_disabled: true },
    });
    expect(message).toMatchObject({
      message_id: 3,
      from: { id: bot.id, is_bot: true, username: 'shop_bot' },
      chat: { id: person.telegram_user_id, type: 'private', first_name: 'Ivan' },
      text: 'Your order has shipped',
      reply_markup: { inline_keyboard: [[{ text: 'Track order', url: 'https://shop.example/o/1' }]] },
    });
    const [received] = await sim.control.messages(person.id);
    expect(received).toMatchObject({
      text: 'Your order has shipped',
      buttons: [[{ text: 'Track order', url: 'https://shop.example/o/1' }]],
    });
  });

  it('raises GrammyError with the real codes and descriptions for unreachable recipients', async () => {
    const { sim, bot, api } = await setup({ RATE_LIMITS_ENABLED: 'false' });
    const blocked = await reachablePerson(sim.control, bot, '79990000001', 'Blocked');
    await sim.control.act(blocked.id, { action: 'block', bot_id: bot.id });
    const gone = await reachablePerson(sim.control, bot, '79990000002', 'Gone');
    await sim.control.act(gone.id, { action: 'deactivate' });
    const stranger = await sim.control.createPerson('79990000003', 'Stranger');

    expect(fields(await grammyError(api.sendMessage(blocked.telegram_user_id, 'x')))).toEqual({
      error_code: 403,
      description: 'Forbidden: bot was blocked by the user',
      parameters: {},
    });
    expect(fields(await grammyError(api.sendMessage(gone.telegram_user_id, 'x')))).toEqual({
      error_code: 403,
      description: 'Forbidden: user is deactivated',
      parameters: {},
    });
    expect(fields(await grammyError(api.sendMessage(stranger.telegram_user_id, 'x')))).toEqual({
      error_code: 403,
      description: "Forbidden: bot can't initiate conversation with a user",
      parameters: {},
    });
    expect(fields(await grammyError(api.sendMessage(123, 'x')))).toEqual({
      error_code: 400,
      description: 'Bad Request: chat not found',
      parameters: {},
    });
  });

  it('raises GrammyError for invalid requests: too long, bad button URL', async () => {
    const { sim, bot, api } = await setup();
    const person = await reachablePerson(sim.control, bot, '79123456789');
    const tooLong = await grammyError(api.sendMessage(person.telegram_user_id, 'x'.repeat(4097)));
    expect(fields(tooLong)).toEqual({
      error_code: 400,
      description: 'Bad Request: message is too long',
      parameters: {},
    });
    expect(tooLong.method).toBe('sendMessage');
    const badUrl = await grammyError(
      api.sendMessage(person.telegram_user_id, 'x', {
        reply_markup: new InlineKeyboard().url('Open', 'ftp://files.example/1'),
      }),
    );
    expect(fields(badUrl)).toEqual({
      error_code: 400,
      description: 'Bad Request: BUTTON_URL_INVALID',
      parameters: {},
    });
  });

  it('raises GrammyError 429 with parameters.retry_after when the chat is flooded', async () => {
    const { sim, bot, api } = await setup({ TELEGRAM_CHAT_BURST: '1' });
    const person = await reachablePerson(sim.control, bot, '79123456789');
    await api.sendMessage(person.telegram_user_id, 'first');
    expect(fields(await grammyError(api.sendMessage(person.telegram_user_id, 'second')))).toEqual({
      error_code: 429,
      description: 'Too Many Requests: retry after 1',
      parameters: { retry_after: 1 },
    });
  });

  it('raises GrammyError 429 for a forced 429 fault and 401 for a revoked token', async () => {
    const { sim, bot, api } = await setup();
    await sim.control.addFault({ kind: '429', bot_id: bot.id, retry_after: 7 });
    expect(fields(await grammyError(api.getMe()))).toEqual({
      error_code: 429,
      description: 'Too Many Requests: retry after 7',
      parameters: { retry_after: 7 },
    });
    await sim.control.call('DELETE', `/bots/${bot.id}`);
    expect(fields(await grammyError(api.getMe()))).toEqual({
      error_code: 401,
      description: 'Unauthorized',
      parameters: {},
    });
  });

  it('a hostile-error fault: grammY hands over what the messenger said, NUL, broken bytes, a megabyte and all', async () => {
    const { sim, bot, api } = await setup();
    const person = await reachablePerson(sim.control, bot, '79123456789');
    const send = () => api.sendMessage(person.telegram_user_id, 'x');
    await sim.control.addFault({ kind: 'hostile-error', bot_id: bot.id, method: 'sendMessage' });
    const controls = await grammyError(send());
    expect(controls.error_code).toBe(400);
    expect(controls.description).toBe(`Bad Request: ${HOSTILE_TEXT}`);
    await sim.control.addFault({
      kind: 'hostile-error',
      bot_id: bot.id,
      hostile: 'invalid-utf8',
      status: 403,
    });
    const broken = await grammyError(send());
    expect(broken.error_code).toBe(403);
    expect(broken.description).toMatch(/^Bad Request: broken \ufffd+ \ufffd+ bytes$/);
    await sim.control.addFault({ kind: 'hostile-error', bot_id: bot.id, hostile: 'huge', size: 1_000_000 });
    expect((await grammyError(send())).description).toHaveLength('Bad Request: '.length + 1_000_000);
    // No JSON at all: grammY fails the call as a network error would, quoting the body's start in its cause.
    await sim.control.addFault({ kind: 'hostile-error', bot_id: bot.id, hostile: 'not-json', status: 502 });
    const notJson = await send().catch((e: unknown) => e);
    expect(notJson).toBeInstanceOf(HttpError);
    expect(String((notJson as HttpError).error)).toContain('boom');
    // The fault is spent: the next call is served.
    expect((await send()).text).toBe('x');
  });

  it('getUpdates with offset, and setWebhook with a secret token that arrives in the header', async () => {
    const { sim, bot, api } = await setup();
    const person = await sim.control.createPerson('79123456789', 'Ivan');
    await sim.control.act(person.id, { action: 'start', bot_id: bot.id, payload: 'co-7' });
    const updates = await api.getUpdates({ timeout: 0 });
    expect(updates.map((u) => u.message?.text)).toEqual(['/start co-7']);
    expect(await api.getUpdates({ offset: updates[0]!.update_id + 1, timeout: 0 })).toEqual([]);

    const hook = await webhookReceiver();
    try {
      expect(await api.setWebhook(hook.url, { secret_token: 'grammy-secret' })).toBe(true);
      await sim.control.act(person.id, { action: 'block', bot_id: bot.id });
      const [push] = await hook.waitFor(1);
      expect(push!.headers['x-telegram-bot-api-secret-token']).toBe('grammy-secret');
      expect(push!.body).toMatchObject({ my_chat_member: { new_chat_member: { status: 'kicked' } } });
      const conflict = await grammyError(api.getUpdates({ timeout: 0 }));
      expect(conflict.error_code).toBe(409);
      expect(await api.deleteWebhook()).toBe(true);
      expect((await api.getWebhookInfo()).url).toBe('');
    } finally {
      await hook.close();
    }
  });
});

describe('a grammY Bot long polling the simulator', () => {
  it('receives the start and the shared contact, and can check the contact is the sender’s own', async () => {
    const { sim, bot: botView } = await setup();
    const bot = new Bot(botView.token, { client: { apiRoot: sim.base } });
    const contacts: { own: boolean; phone: string }[] = [];
    const starts: string[] = [];
    bot.command('start', (ctx) => void starts.push(ctx.match));
    bot.on('message:contact', (ctx) => {
      contacts.push({
        own: ctx.message.contact.user_id === ctx.from.id,
        phone: ctx.message.contact.phone_number,
      });
    });
    const running = bot.start({ drop_pending_updates: false });
    try {
      const ivan = await sim.control.createPerson('79123456789', 'Ivan');
      const olga = await sim.control.createPerson('79990001122', 'Olga');
      await sim.control.act(ivan.id, { action: 'start', bot_id: botView.id, payload: 'co-7' });
      await sim.control.act(ivan.id, { action: 'share_contact', bot_id: botView.id, phone_format: 'plus' });
      await sim.control.act(ivan.id, {
        action: 'share_contact',
        bot_id: botView.id,
        contact: { person_id: olga.id },
      });
      const deadline = Date.now() + 5000;
      while (contacts.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    } finally {
      await bot.stop();
      await running;
    }
    expect(starts).toEqual(['co-7']);
    expect(contacts).toEqual([
      { own: true, phone: '+79123456789' },
      { own: false, phone: '79990001122' },
    ]);
  });
});
