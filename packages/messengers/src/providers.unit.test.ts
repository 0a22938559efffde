import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { BUILT_IN_MESSENGERS, registerMessenger } from '@mds/contracts';
import { fakeMessenger } from '@mds/contracts/testing/messengers';
import { providerOf, providers, registerProvider, requireProvider, type ProviderFactory } from './index.js';

const fake: ProviderFactory = {
  defaultApiBase: 'http://127.0.0.1:1',
  senderDefaults: { httpPort: 8099, botRatePerSecond: 5, chatRatePerSecond: 1 },
  create: () => {
    throw new Error('not in this test');
  },
  identifyBot: () => Promise.resolve({ ok: false, reason: 'rejected', detail: 'fake' }),
};

describe('the providers', () => {
  it('has one for every built-in messenger of the catalogue, with its own sender port', () => {
    for (const m of BUILT_IN_MESSENGERS) expect(providerOf(m.name)).toBe(providers[m.name]);
    const ports = BUILT_IN_MESSENGERS.map((m) => providers[m.name].senderDefaults.httpPort);
    expect(new Set(ports).size).toBe(ports.length);
  });

  it('takes a plugin registered in the catalogue first, and refuses an unknown name or a second one', () => {
    expect(() => registerProvider('owl', fake)).toThrow(/no messenger "owl" in the catalogue/);
    registerMessenger(fakeMessenger('owl', 91));
    registerProvider('owl', fake);
    expect(requireProvider('owl')).toBe(fake);
    expect(() => registerProvider('owl', fake)).toThrow(/has a provider already/);
    expect(() => requireProvider('crow')).toThrow(/no provider for messenger "crow" \(providers: .*owl\)/);
  });
});

describe("a built-in provider's token check", () => {
  it('asks the bot API at the base given, and says unreachable when nothing answers there', async () => {
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(req.url ?? '');
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const apiBase = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const token = '7000000001:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
      const signal = AbortSignal.timeout(5_000);
      const answers = await Promise.all(
        BUILT_IN_MESSENGERS.map((m) => providers[m.name].identifyBot(token, { apiBase, signal })),
      );
      for (const answer of answers) expect(answer).toMatchObject({ ok: false, reason: 'unreachable' });
      expect(paths.sort()).toEqual([`/bot${token}/getMe`, '/me']);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('refuses a malformed Telegram token without asking', async () => {
    const answer = await providers.telegram.identifyBot('not a token', {
      apiBase: 'http://127.0.0.1:1',
      signal: AbortSignal.timeout(1_000),
    });
    expect(answer).toMatchObject({ ok: false, reason: 'rejected' });
  });
});
