import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '@mds/logging';
import { replyJson } from './reply.js';
import { saveBeforeAnswer } from './save-before-answer.js';

const logger = createLogger({ service: 'test', level: 'silent' });
let close: (() => void) | undefined;
afterEach(() => close?.());

async function serve(save: () => void) {
  const app = express();
  app.use(saveBeforeAnswer(save, logger));
  app.get('/json', (_req, res) => res.json({ ok: true }));
  app.get('/raw', (_req, res) => replyJson(res, 201, { ok: true }));
  app.delete('/empty', (_req, res) => res.status(204).end());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  close = () => server.close();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('saveBeforeAnswer', () => {
  it('saves before every kind of answer leaves', async () => {
    const events: string[] = [];
    const base = await serve(() => events.push('saved'));
    for (const [path, method] of [
      ['/json', 'GET'],
      ['/raw', 'GET'],
      ['/empty', 'DELETE'],
    ] as const) {
      const res = await fetch(`${base}${path}`, { method });
      events.push(`answered ${res.status}`);
    }
    expect(events).toEqual(['saved', 'answered 200', 'saved', 'answered 201', 'saved', 'answered 204']);
  });

  it('drops the connection unanswered when saving fails, and answers again once it works', async () => {
    let failing = true;
    const base = await serve(() => {
      if (failing) throw new Error('disk full');
    });
    await expect(fetch(`${base}/json`)).rejects.toThrow('fetch failed');
    failing = false;
    expect((await fetch(`${base}/json`)).status).toBe(200);
  });
});
