import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebhookSender } from './http-sender.js';
import { addressPolicy } from './ssrf.js';

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
      policy: addressPolicy(['127.0.0.1/32']),
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
});
