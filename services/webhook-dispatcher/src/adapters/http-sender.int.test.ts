import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookSender } from './http-sender.js';
import { addressPolicy, parsePortRanges } from './ssrf.js';

let port: number;
let hits = 0;
const server = createServer((req, res) => {
  hits++;
  if (req.url === '/redirect') return void res.writeHead(302, { location: '/ok' }).end();
  if (req.url === '/big') return void res.writeHead(500).end('x'.repeat(100_000));
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
