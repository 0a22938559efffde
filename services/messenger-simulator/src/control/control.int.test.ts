import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, controlFailure, postJson, startSimulator } from '../../test/simulator.js';

afterEach(closeAll);

describe('bots', () => {
  it('creates a bot and returns its token and the API root to give a client', async () => {
    const sim = await startSimulator();
    const bot = await sim.control.createBot('telegram', 'shop_bot', 'Shop');
    expect(bot).toMatchObject({
      messenger: 'telegram',
      username: 'shop_bot',
      name: 'Shop',
      api_root: sim.base,
      webhook: null,
    });
    expect(await sim.control.call('GET', `/bots/${bot.id}`)).toEqual(bot);
    expect(await sim.control.call('GET', '/bots')).toEqual({ bots: [bot] });
  });

  it('refuses invalid and duplicate bots with a clear error', async () => {
    const sim = await startSimulator();
    await sim.control.createBot('max', 'shop');
    expect(
      await controlFailure(sim.control.call('POST', '/bots', { messenger: 'icq', username: 'x' })),
    ).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_request' } },
    });
    expect(await controlFailure(sim.control.createBot('telegram', 'shop'))).toEqual({
      status: 400,
      body: {
        error: { code: 'invalid_request', message: expect.stringContaining('ending in "bot"') as string },
      },
    });
    expect(await controlFailure(sim.control.createBot('max', 'shop'))).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: 'a max bot @shop already exists' } },
    });
    expect(await controlFailure(sim.control.call('GET', '/bots/1'))).toMatchObject({ status: 404 });
  });
});

describe('people and their actions', () => {
  it('creates a person, refuses a bad or taken phone number', async () => {
    const sim = await startSimulator();
    const person = await sim.control.createPerson('+7 912 345-67-89', 'Ivan', { last_name: 'Petrov' });
    expect(person).toMatchObject({
      phone_number: '79123456789',
      first_name: 'Ivan',
      last_name: 'Petrov',
      deactivated: false,
      chats: [],
    });
    expect(await controlFailure(sim.control.createPerson('79123456789', 'Other'))).toMatchObject({
      status: 409,
    });
    expect(await controlFailure(sim.control.createPerson('123', 'Short'))).toMatchObject({ status: 400 });
    expect(
      await controlFailure(sim.control.call('POST', '/people', { phone_number: '79990001122' })),
    ).toMatchObject({
      status: 400,
      body: {
        error: { code: 'invalid_request', message: expect.stringContaining('first_name') as string },
      },
    });
  });

  it('returns the update payloads an action produced and refuses impossible actions', async () => {
    const sim = await startSimulator();
    const bot = await sim.control.createBot('telegram', 'shop_bot');
    const person = await sim.control.createPerson('79123456789', 'Ivan');
    expect(
      await controlFailure(sim.control.act(person.id, { action: 'share_contact', bot_id: bot.id })),
    ).toEqual({
      status: 409,
      body: { error: { code: 'conflict', message: `person ${person.id} has not started @shop_bot` } },
    });
    const started = await sim.control.act<{ updates: { message: { text: string } }[] }>(person.id, {
      action: 'start',
      bot_id: bot.id,
      payload: 'abc',
    });
    expect(started.updates.map((u) => u.message.text)).toEqual(['/start abc']);
    expect(
      await controlFailure(sim.control.act(person.id, { action: 'dance', bot_id: bot.id })),
    ).toMatchObject({
      status: 400,
    });
    expect(await controlFailure(sim.control.act(person.id, { action: 'start', bot_id: 999 }))).toMatchObject({
      status: 404,
    });
    expect(await controlFailure(sim.control.act(999, { action: 'start', bot_id: bot.id }))).toMatchObject({
      status: 404,
    });
    expect(
      await controlFailure(
        sim.control.act(person.id, { action: 'share_contact', bot_id: bot.id, contact: { person_id: 999 } }),
      ),
    ).toMatchObject({
      status: 404,
    });
    const viewed = await sim.control.call('GET', `/people/${person.id}`);
    expect(viewed).toMatchObject({
      chats: [{ bot_id: bot.id, chat_id: person.telegram_user_id, status: 'active', received: 0 }],
    });
  });

  it('lists what a person received, across bots or for one bot, oldest first', async () => {
    const sim = await startSimulator();
    const tg = await sim.control.createBot('telegram', 'shop_bot');
    const max = await sim.control.createBot('max', 'shop');
    const person = await sim.control.createPerson('79123456789', 'Ivan');
    await sim.control.act(person.id, { action: 'start', bot_id: tg.id });
    await sim.control.act(person.id, { action: 'start', bot_id: max.id });
    await postJson(`${sim.base}/bot${tg.token}/sendMessage`, {
      chat_id: person.telegram_user_id,
      text: 'from telegram',
    });
    await postJson(
      `${sim.base}/messages?user_id=${person.max_user_id}`,
      { text: 'from max' },
      { Authorization: max.token },
    );
    expect((await sim.control.messages(person.id)).map((m) => m.text)).toEqual(['from telegram', 'from max']);
    const onlyMax = await sim.control.call<{ messages: { text: string }[] }>(
      'GET',
      `/people/${person.id}/messages?bot_id=${max.id}`,
    );
    expect(onlyMax.messages.map((m) => m.text)).toEqual(['from max']);
  });
});

describe('faults, request log, reset', () => {
  it('adds, lists and removes faults; validates them', async () => {
    const sim = await startSimulator();
    const bot = await sim.control.createBot('telegram', 'shop_bot');
    const fault = await sim.control.addFault({ kind: '5xx', bot_id: bot.id, count: 3 });
    expect(fault).toMatchObject({ kind: '5xx', messenger: 'telegram', bot_token: bot.token, remaining: 3 });
    expect(await sim.control.call('GET', '/faults')).toEqual({ faults: [fault] });
    await sim.control.call('DELETE', `/faults/${fault.id}`);
    expect(await controlFailure(sim.control.call('DELETE', `/faults/${fault.id}`))).toMatchObject({
      status: 404,
    });
    expect(await controlFailure(sim.control.addFault({ kind: 'explode' }))).toMatchObject({ status: 400 });
    expect(await controlFailure(sim.control.addFault({ kind: '5xx', status: 404 }))).toMatchObject({
      status: 400,
    });
    expect(await controlFailure(sim.control.addFault({ kind: 'latency', bot_id: 12345 }))).toMatchObject({
      status: 404,
    });
    await sim.control.addFault({ kind: 'latency', ms: 5, count: 10 });
    await sim.control.call('DELETE', '/faults');
    expect(await sim.control.call('GET', '/faults')).toEqual({ faults: [] });
  });

  it('a hostile-error fault is validated, listed with its variant, and logged by a short summary', async () => {
    const sim = await startSimulator();
    const bot = await sim.control.createBot('telegram', 'shop_bot');
    const fault = await sim.control.addFault({
      kind: 'hostile-error',
      bot_id: bot.id,
      hostile: 'huge',
      size: 5000,
    });
    expect(fault).toMatchObject({
      kind: 'hostile-error',
      hostile: 'huge',
      size: 5000,
      status: null,
      remaining: 1,
    });
    const answer = await fetch(`${sim.base}/bot${bot.token}/getMe`);
    expect(answer.status).toBe(400);
    expect(((await answer.json()) as { description: string }).description).toHaveLength(
      'Bad Request: '.length + 5000,
    );
    const { requests } = await sim.control.call<{ requests: { status: number; error: string }[] }>(
      'GET',
      '/requests',
    );
    expect(requests.at(-1)).toMatchObject({ status: 400, error: 'hostile error: 5000 characters' });
    for (const bad of [
      { kind: 'hostile-error', hostile: 'sneaky' },
      { kind: 'hostile-error', status: 302 },
      { kind: '5xx', hostile: 'controls' },
      { kind: '5xx', status: 404 },
    ])
      expect(await controlFailure(sim.control.addFault(bad)), JSON.stringify(bad)).toMatchObject({
        status: 400,
      });
  });

  it('takes people whose names hold NUL, controls, lone surrogates and 64 K characters, and contact cards likewise', async () => {
    const sim = await startSimulator();
    const bot = await sim.control.createBot('telegram', 'shop_bot');
    const maxBot = await sim.control.createBot('max', 'shop');
    const hostile = 'Iv\u0000an \u0007\u001b[31m \ud800 \ufffe\r\nTEL:70000000000';
    const person = await sim.control.createPerson('79123456789', hostile, {
      last_name: 'x'.repeat(65_536),
    });
    expect(await sim.control.call('GET', `/people/${person.id}`)).toMatchObject({ first_name: hostile });
    for (const b of [bot, maxBot]) await sim.control.act(person.id, { action: 'start', bot_id: b.id });
    const shared = await sim.control.act<{
      updates: { message: { contact: Record<string, unknown> } }[];
    }>(person.id, {
      action: 'share_contact',
      bot_id: bot.id,
    });
    expect(shared.updates[0]!.message.contact).toMatchObject({
      first_name: hostile,
      phone_number: '79123456789',
    });
    const card = await sim.control.act<{
      updates: { message: { body: { attachments: { payload: { vcf_info: string } }[] } } }[];
    }>(person.id, {
      action: 'share_contact',
      bot_id: maxBot.id,
      contact: { phone_number: '7912\u0000\r\nTEL:70000000000', first_name: hostile },
    });
    // In the vCard, as ez-vcard writes it, no value ends its line: the only TEL is the card's own.
    const vcf = card.updates[0]!.message.body.attachments[0]!.payload.vcf_info;
    expect(vcf.match(/^TEL/gm)).toHaveLength(1);
    expect(vcf).toContain('FN:Iv\u0000an \u0007\u001b[31m \ud800 \ufffe\\nTEL:70000000000');
  });

  it('reset forgets bots, people, faults and the request log', async () => {
    const sim = await startSimulator();
    const bot = await sim.control.createBot('telegram', 'shop_bot');
    await sim.control.createPerson('79123456789', 'Ivan');
    await sim.control.addFault({ kind: '429' });
    await fetch(`${sim.base}/bot${bot.token}/getMe`);
    await sim.control.call('POST', '/reset');
    expect(await sim.control.call('GET', '/bots')).toEqual({ bots: [] });
    expect(await sim.control.call('GET', '/people')).toEqual({ people: [] });
    expect(await sim.control.call('GET', '/faults')).toEqual({ faults: [] });
    expect(await sim.control.call('GET', '/requests')).toEqual({ requests: [] });
  });

  it('answers unknown endpoints and broken JSON with JSON errors', async () => {
    const sim = await startSimulator();
    expect(await controlFailure(sim.control.call('GET', '/nothing'))).toMatchObject({
      status: 404,
      body: { error: { code: 'not_found' } },
    });
    const res = await fetch(`${sim.base}/control/people`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"phone_number":',
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 'invalid_request' } });
  });
});
