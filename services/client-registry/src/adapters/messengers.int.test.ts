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
    const endpoints = { telegramApiRoot: root, maxApiBase: root, timeoutMs: 2_000 };
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
