// The simulator as its own process: ops endpoints, metrics, prompt shutdown with calls pending.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, startSimulator } from '../test/simulator.js';

const MAIN = join(import.meta.dirname, 'main.ts');

function run(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--conditions=@mds/source', '--import', 'tsx', MAIN], {
    env: { ...process.env, HTTP_HOST: '127.0.0.1', HTTP_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => out, exited };
}

async function waitFor<T>(read: () => T | undefined, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

afterEach(closeAll);

describe('main', () => {
  it('serves ops endpoints and the APIs, and stops on SIGTERM at once even with a long poll pending', async () => {
    const service = run({});
    try {
      const base = await waitFor(() => /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(service.output())?.[1]);
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      await waitFor(() => (service.output().includes('"msg":"started"') ? true : undefined));
      expect((await fetch(`${base}/readyz`)).status).toBe(200);
      const bot = (await (
        await fetch(`${base}/control/bots`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ messenger: 'telegram', username: 'shop_bot' }),
        })
      ).json()) as { token: string };
      expect((await fetch(`${base}/bot${bot.token}/getMe`)).status).toBe(200);
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(
        /mds_simulator_api_calls_total\{messenger="telegram",method="getMe",status="200",service="messenger-simulator"\} 1/,
      );
      expect(metrics).toMatch(
        /mds_http_requests_total\{method="GET",route="\/bot:token\/:method",status="200"/,
      );
      expect(metrics).not.toContain(bot.token);

      const poll = fetch(`${base}/bot${bot.token}/getUpdates?timeout=50`).then((r) => r.json());
      await new Promise((r) => setTimeout(r, 200));
      const stopping = Date.now();
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      expect(Date.now() - stopping).toBeLessThan(5000);
      expect(await poll).toEqual({ ok: true, result: [] });
      expect(service.output()).not.toContain(bot.token);
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it('refuses to start on a bad setting, naming the variable', async () => {
    const service = run({ TELEGRAM_CHAT_RATE_PER_S: 'fast' });
    expect(await service.exited).not.toBe(0);
    expect(service.output()).toContain('TELEGRAM_CHAT_RATE_PER_S');
  });
});

describe('stopping in-process', () => {
  it('answers pending long polls of both APIs and closes within moments', async () => {
    const sim = await startSimulator();
    const tg = await sim.control.createBot('telegram', 'shop_bot');
    const max = await sim.control.createBot('max', 'shop');
    const tgPoll = fetch(`${sim.base}/bot${tg.token}/getUpdates?timeout=30`).then((r) => r.json());
    const maxPoll = fetch(`${sim.base}/updates?timeout=30`, { headers: { Authorization: max.token } }).then(
      (r) => r.json(),
    );
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    await sim.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(await tgPoll).toEqual({ ok: true, result: [] });
    expect(await maxPoll).toEqual({ updates: [], marker: 1 });
  });
});
