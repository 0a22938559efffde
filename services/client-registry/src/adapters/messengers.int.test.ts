import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkBotToken } from './messengers.js';

// A messenger (or a proxy in front of it) that quotes the request back in its refusal: the URL, where the
// Telegram token travels, and the Authorization header, where MAX's does.
const server = createServer((req, res) => {
  const echoed = `no such bot at ${req.url} (${req.headers.authorization ?? ''})`;
  res.writeHead(401, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ ok: false, description: echoed, code: 'verify.token', message: echoed }));
});
let root = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('a refused bot token', () => {
  it('is reported without the token, whatever the messenger echoed', async () => {
    const endpoints = { apiBases: { telegram: root, max: root }, timeoutMs: 2_000 };
    const telegram = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
    const max = 'max-token-with-some/odd:characters';
    const checks = [
      await checkBotToken('telegram', telegram, endpoints),
      await checkBotToken('max', max, endpoints),
    ];
    for (const check of checks) expect(check).toMatchObject({ ok: false, reason: 'rejected' });
    const details = JSON.stringify(checks);
    expect(details).toContain('[redacted]');
    for (const token of [telegram, max, encodeURIComponent(telegram)]) expect(details).not.toContain(token);
  });
});

// A messenger answering what no client should trust: `answer` is set by each test.
let answer: { status: number; body: Buffer } = { status: 200, body: Buffer.from('{}') };
const hostile = createServer((req, res) => {
  req.resume();
  res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
});
let hostileRoot = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve));
  hostileRoot = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => hostile.close(() => resolve())));

describe("a messenger's answer to a token check, cleaned before it is stored, evented or shown", () => {
  const TOKEN = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
  const check = (messenger: 'telegram' | 'max') =>
    checkBotToken(messenger, messenger === 'telegram' ? TOKEN : 'max-token', {
      apiBases: { telegram: hostileRoot, max: hostileRoot },
      timeoutMs: 5_000,
    });
  const json = (status: number, body: unknown) => ({ status, body: Buffer.from(JSON.stringify(body)) });

  it('a bot whose id and username hold NUL, controls, a lone surrogate, or run on and on', async () => {
    answer = json(200, {
      ok: true,
      result: { id: 7000000001, username: `shop\u0000\u001b[31m\ud800_bot${'x'.repeat(10_000)}` },
    });
    const telegram = await check('telegram');
    expect(telegram.ok && telegram.bot.username).toBe(
      `shop\ufffd\ufffd[31m\ufffd_bot${'x'.repeat(256 - 15)}`,
    );
    answer = json(200, { user_id: '30000001\u0000', username: 'maxshop\u0007' });
    expect(await check('max')).toEqual({
      ok: true,
      bot: { providerBotId: '30000001\ufffd', username: 'maxshop\ufffd' },
    });
  });

  it('a refusal whose words hold controls, bytes that are no UTF-8, or a megabyte: kept clean and short', async () => {
    answer = json(401, { ok: false, description: `Unauthorized \u0000 \u0085 ${TOKEN} \ufffe` });
    expect(await check('telegram')).toEqual({
      ok: false,
      reason: 'rejected',
      detail: 'Telegram refused the token: Unauthorized \ufffd \ufffd [redacted] \ufffd',
    });
    answer = {
      status: 401,
      body: Buffer.concat([
        Buffer.from('{"message": "bad '),
        Buffer.from([0xff, 0xc0, 0x80]),
        Buffer.from('"}'),
      ]),
    };
    expect(await check('max')).toMatchObject({
      ok: false,
      detail: 'MAX refused the token: bad \ufffd\ufffd\ufffd',
    });
    answer = json(401, { message: 'y'.repeat(1_000_000) });
    const long = await check('max');
    expect(!long.ok && long.detail.length).toBe(500);
  });
});
