import { createServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { isCleanText } from '@mds/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookSender } from './http-sender.js';
import { addressPolicy, parsePortRanges } from './ssrf.js';

let port: number;
let hits = 0;
const server = createServer((req, res) => {
  hits++;
  if (req.url === '/redirect') return void res.writeHead(302, { location: '/ok' }).end();
  if (req.url === '/big') return void res.writeHead(500).end('x'.repeat(100_000));
  if (req.url === '/nul') return void res.writeHead(500).end('boom\u0000 \u0007 \u001b[31m \u0085 \ufffe');
  if (req.url === '/broken')
    return void res
      .writeHead(500)
      .end(
        Buffer.concat([
          Buffer.from('bad '),
          Buffer.from([0xff, 0xc0, 0x80, 0xed, 0xa0, 0x80]),
          Buffer.from(' end'),
        ]),
      );
  if (req.url === '/ten-megabytes')
    return void res.writeHead(500).end(Buffer.alloc(10 * 1024 * 1024, '\u0000'));
  if (req.url === '/cyrillic') return void res.writeHead(500).end('я'.repeat(100));
  if (req.url === '/trickle') {
    res.writeHead(500);
    const timer = setInterval(() => res.write('\u0000'), 100);
    res.on('close', () => clearInterval(timer));
    return;
  }
  res.writeHead(200).end('fine');
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const now = new Date();

describe('the webhook sender', () => {
  it('refuses a host name that resolves to loopback when connecting, unless allowlisted', async () => {
    const strict = createWebhookSender({ policy: addressPolicy([]), timeoutMs: 2_000, excerptBytes: 100 });
    const before = hits;
    const refused = await strict.send(`http://localhost:${port}/ok`, {}, '{}', now);
    expect(refused.result).toMatchObject({
      kind: 'blocked',
      error: expect.stringMatching(/refused localhost: .*loopback/),
    });
    const literal = await strict.send(`http://127.0.0.1:${port}/ok`, {}, '{}', now);
    expect(literal.result.kind).toBe('blocked');
    const metadata = await strict.send('http://169.254.169.254/latest/meta-data/', {}, '{}', now);
    expect(metadata.result).toMatchObject({ kind: 'blocked', error: expect.stringMatching(/linkLocal/) });
    const compatible = await strict.send(`http://[::127.0.0.1]:${port}/ok`, {}, '{}', now);
    expect(compatible.result).toMatchObject({
      kind: 'blocked',
      error: expect.stringMatching(/IPv4-compatible/),
    });
    expect(hits).toBe(before);
    await strict.close();

    const local = createWebhookSender({
      policy: addressPolicy(['localhost', '127.0.0.1/32']),
      timeoutMs: 2_000,
      excerptBytes: 100,
    });
    const allowed = await local.send(`http://localhost:${port}/ok`, {}, '{}', now);
    expect(allowed).toMatchObject({ result: { kind: 'response', status: 200 }, responseExcerpt: 'fine' });
    await local.close();
  });

  it('never follows redirects and keeps only the start of a response body', async () => {
    const sender = createWebhookSender({
      // Every port, for the connection refused on port 1 below.
      policy: addressPolicy(['127.0.0.1/32'], parsePortRanges('1-65535')),
      timeoutMs: 2_000,
      excerptBytes: 100,
    });
    const redirected = await sender.send(`http://127.0.0.1:${port}/redirect`, {}, '{}', now);
    expect(redirected.result).toMatchObject({ kind: 'response', status: 302 });
    const big = await sender.send(`http://127.0.0.1:${port}/big`, {}, '{}', now);
    expect(big.responseExcerpt).toHaveLength(100);
    const refused = await sender.send('http://127.0.0.1:1/nothing', {}, '{}', now);
    expect(refused.result).toMatchObject({ kind: 'network', error: expect.stringMatching(/ECONNREFUSED/) });
    await sender.close();
  });

  it('refuses ports other than 80, 443 and 1024 and above, even on an allowlisted host', async () => {
    const local = createWebhookSender({
      policy: addressPolicy(['127.0.0.1/32']),
      timeoutMs: 2_000,
      excerptBytes: 100,
    });
    const before = hits;
    for (const url of ['http://127.0.0.1:22/ok', 'http://127.0.0.1:25/ok', 'https://127.0.0.1:1023/ok']) {
      const refused = await local.send(url, {}, '{}', now);
      expect(refused.result, url).toMatchObject({
        kind: 'blocked',
        error: expect.stringMatching(/^port \d+ is not one/),
      });
    }
    expect(hits).toBe(before);
    expect((await local.send(`http://127.0.0.1:${port}/ok`, {}, '{}', now)).result.kind).not.toBe('blocked');
    await local.close();
  });
});

describe('what an endpoint answers, as the attempt keeps it', () => {
  const sender = () =>
    createWebhookSender({ policy: addressPolicy(['127.0.0.1/32']), timeoutMs: 1_500, excerptBytes: 101 });
  const sent = async (path: string) => {
    const s = sender();
    try {
      return await s.send(`http://127.0.0.1:${port}${path}`, {}, '{}', now);
    } finally {
      await s.close();
    }
  };

  it('NUL, controls and non-characters, and bytes that are no UTF-8: U+FFFD in their place', async () => {
    expect((await sent('/nul')).responseExcerpt).toBe('boom\ufffd \ufffd \ufffd[31m \ufffd \ufffd');
    expect((await sent('/broken')).responseExcerpt).toBe('bad \ufffd\ufffd\ufffd\ufffd\ufffd\ufffd end');
  });

  it('ten megabytes of NUL: the excerpt its bound, and the attempt over within the timeout', async () => {
    const big = await sent('/ten-megabytes');
    expect(big.result).toMatchObject({ kind: 'response', status: 500 });
    expect(big.responseExcerpt).toBe('\ufffd'.repeat(101));
  });

  it('cut at the bound between characters, not inside one', async () => {
    // 101 bytes would end in the first byte of a 2-byte letter: the excerpt keeps 50 letters (100 bytes).
    expect((await sent('/cyrillic')).responseExcerpt).toBe('я'.repeat(50));
  });

  it('an answer trickling in past the timeout: timed out, nothing kept', async () => {
    expect(await sent('/trickle')).toMatchObject({ result: { kind: 'timeout' }, responseExcerpt: '' });
  });

  it('headers that break HTTP, or hold bytes that are no ASCII: a clean network error, or ignored', async () => {
    const raw = createTcpServer((socket) => {
      socket.once('data', (request) => {
        const bad = request.toString('latin1').includes('/control');
        socket.end(
          Buffer.concat([
            Buffer.from('HTTP/1.1 503 Busy\r\ncontent-length: 2\r\n'),
            bad ? Buffer.from('retry-after: 1\u0001\u0000\r\n') : Buffer.from([]),
            Buffer.from('webhook-delivery: '),
            Buffer.from([0xff, 0xfe, 0x80]),
            Buffer.from('\r\nretry-after: '),
            Buffer.from([0xc0, 0x80]),
            Buffer.from('\r\n\r\nok'),
          ]),
        );
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const rawPort = (raw.address() as AddressInfo).port;
    const s = sender();
    try {
      const broken = await s.send(`http://127.0.0.1:${rawPort}/control`, {}, '{}', now);
      expect(broken.result.kind).toBe('network');
      expect(broken.result.kind === 'network' && isCleanText(broken.result.error)).toBe(true);
      const odd = await s.send(`http://127.0.0.1:${rawPort}/obs-text`, {}, '{}', now);
      // The control header is compared with two words only, Retry-After read as a number: neither is kept.
      expect(odd).toMatchObject({ result: { kind: 'response', status: 503 }, responseExcerpt: 'ok' });
      expect(odd.result.kind === 'response' && odd.result.retryAfterSeconds).toBeFalsy();
    } finally {
      await s.close();
      await new Promise((resolve) => raw.close(resolve));
    }
  });
});
