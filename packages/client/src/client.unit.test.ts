import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MdsClient,
  MdsNetworkError,
  MdsRateLimitedError,
  MdsUnauthorizedError,
  MdsUnavailableError,
  MdsValidationError,
  MdsWebhookError,
  retryAfterMs,
  verifyWebhook,
  type FallbackChannel,
  type Metadata,
} from './index.js';

// The SDK's own behaviour over real HTTP: a local server answers with a script of statuses (what the gateway
// answers under load or outage), and records what the SDK sent. Against the real gateway: test-e2e's flows.

type Answer = { status: number; headers?: Record<string, string>; body: unknown };
let server: Server;
let baseUrl: string;
let script: Answer[] = [];
const seen: { method: string; url: string; headers: IncomingMessage['headers']; body: string; at: number }[] =
  [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body, at: Date.now() });
      const answer = script.shift() ?? { status: 500, body: { code: 'internal_error' } };
      const type = answer.status < 300 ? 'application/json' : 'application/problem+json';
      res.writeHead(answer.status, { 'content-type': type, ...answer.headers });
      res.end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const accepted = {
  status: 202,
  body: { status: 'accepted', event_id: '0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10', data: { state: 'new' } },
};
const problem = (status: number, code: string, headers: Record<string, string> = {}) => ({
  status,
  headers,
  body: {
    type: `https://docs.mds.dev/problems/${code}`,
    title: code,
    status,
    code,
    detail: `${code} happened`,
  },
});
const message = { phone_number: '79123456789', service: 'telegram' as const, text: 'Hello' };
const start = (answers: Answer[]) => {
  script = answers;
  seen.length = 0;
};

describe('MdsClient', () => {
  it('sends the key, a made-up Idempotency-Key and the typed body, and answers the typed 202', async () => {
    start([accepted]);
    const mds = new MdsClient({ baseUrl: `${baseUrl}/`, apiKey: 'mds_key' });
    expect(await mds.send(message)).toEqual(accepted.body);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/api/v1/send' });
    expect(seen[0]!.headers['x-api-key']).toBe('mds_key');
    expect(seen[0]!.headers['content-type']).toMatch(/^application\/json/);
    expect(seen[0]!.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.parse(seen[0]!.body)).toEqual(message);
  });

  it('sends an expiry (ttl_seconds), typed as a number', async () => {
    start([accepted]);
    const mds = new MdsClient({ baseUrl, apiKey: 'k' });
    await mds.send({ ...message, ttl_seconds: 300 });
    expect(JSON.parse(seen[0]!.body)).toEqual({ ...message, ttl_seconds: 300 });
    // @ts-expect-error seconds are a number
    const typed: Parameters<MdsClient['send']>[0] = { ...message, ttl_seconds: '300' };
    expect(typed).toBeDefined();
  });

  it('sends metadata with send, change_phone and client/check', async () => {
    const metadata: Metadata = { order_id: 'A-1042' };
    start([accepted, accepted, accepted]);
    const mds = new MdsClient({ baseUrl, apiKey: 'mds_key' });
    await mds.send({ ...message, metadata });
    await mds.changePhone({ old_phone: '79123456789', new_phone: '79876543210', metadata });
    await mds.checkClient({ phone_number: '79123456789', metadata });
    expect(seen.map((s) => (JSON.parse(s.body) as { metadata: Metadata }).metadata)).toEqual([
      metadata,
      metadata,
      metadata,
    ]);
  });

  it('sends a fallback, typed as channels of a service and an optional bot', async () => {
    const fallback: FallbackChannel[] = [
      { service: 'max', bot_name: 'shop_max_bot' },
      { service: 'telegram', bot_name: 'other_bot' },
    ];
    start([accepted]);
    const mds = new MdsClient({ baseUrl, apiKey: 'mds_key' });
    await mds.send({ ...message, fallback });
    expect((JSON.parse(seen[0]!.body) as { fallback: FallbackChannel[] }).fallback).toEqual(fallback);
    // @ts-expect-error: a messenger the service does not know is no channel.
    const unknown: FallbackChannel = { service: 'pigeon' };
    expect(unknown).toBeDefined();
  });

  it('retries a 503 and a 429 after their Retry-After with the same Idempotency-Key', async () => {
    start([
      problem(503, 'broker_unavailable', { 'retry-after': '1' }),
      problem(429, 'rate_limited', { 'retry-after': '1' }),
      accepted,
    ]);
    const mds = new MdsClient({ baseUrl, apiKey: 'k' });
    await mds.checkClient({ phone_number: '79123456789' }, { idempotencyKey: 'mine-1', requestId: 'req-1' });
    expect(seen.map((s) => s.headers['idempotency-key'])).toEqual(['mine-1', 'mine-1', 'mine-1']);
    expect(seen.map((s) => s.headers['x-request-id'])).toEqual(['req-1', 'req-1', 'req-1']);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(950);
    expect(seen[2]!.at - seen[1]!.at).toBeGreaterThanOrEqual(950);
  });

  it('sends a batch with an idempotency_key on every message, kept across a retry, and no Idempotency-Key header', async () => {
    const results = {
      status: 202,
      body: {
        results: [
          { status: 'accepted', event_id: '0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10' },
          {
            status: 'rejected',
            errors: [{ pointer: '#/messages/1/text', detail: 'Required', code: 'required' }],
          },
        ],
      },
    };
    start([problem(503, 'broker_unavailable', { 'retry-after': '0' }), results]);
    const mds = new MdsClient({ baseUrl, apiKey: 'k' });
    expect(await mds.sendBatch([{ ...message, idempotency_key: 'mine' }, message])).toEqual(results.body);
    expect(seen.map((s) => [s.method, s.url, s.headers['idempotency-key']])).toEqual([
      ['POST', '/api/v1/send/batch', undefined],
      ['POST', '/api/v1/send/batch', undefined],
    ]);
    const sent = seen.map(
      (s) => (JSON.parse(s.body) as { messages: { idempotency_key: string }[] }).messages,
    );
    expect(sent[0]![0]).toEqual({ ...message, idempotency_key: 'mine' });
    expect(sent[0]![1]!.idempotency_key).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]).toEqual(sent[0]);
  });

  it('retries a request still in progress (409) but not another conflict', async () => {
    start([problem(409, 'idempotency_request_in_progress', { 'retry-after': '0' }), accepted]);
    const mds = new MdsClient({ baseUrl, apiKey: 'k' });
    await mds.changePhone({ old_phone: '79123456789', new_phone: '79876543210' });
    expect(seen).toHaveLength(2);
  });

  it('gives up after maxRetries with a typed error that carries the code, the problem and Retry-After', async () => {
    start([
      problem(429, 'rate_limited', { 'retry-after': '0' }),
      problem(429, 'rate_limited', { 'retry-after': '0' }),
    ]);
    const mds = new MdsClient({ baseUrl, apiKey: 'k', maxRetries: 1 });
    const error = await mds.send(message).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MdsRateLimitedError);
    expect(error).toMatchObject({
      status: 429,
      code: 'rate_limited',
      retryAfterSeconds: 0,
      operation: 'POST /api/v1/send',
    });
    expect(seen).toHaveLength(2);
    start([problem(503, 'auth_unavailable', { 'retry-after': '0' })]);
    await expect(new MdsClient({ baseUrl, apiKey: 'k', maxRetries: 0 }).send(message)).rejects.toBeInstanceOf(
      MdsUnavailableError,
    );
  });

  it('never retries a 401 or a 422, and names the fields at fault', async () => {
    start([{ status: 401, body: { detail: 'Invalid or missing API key.' } }]);
    const mds = new MdsClient({ baseUrl, apiKey: 'k' });
    await expect(mds.send(message)).rejects.toBeInstanceOf(MdsUnauthorizedError);
    const invalid = problem(422, 'validation_failed');
    (invalid.body as Record<string, unknown>).errors = [
      { pointer: '#/phone_number', detail: 'bad', code: 'invalid_phone_number' },
    ];
    start([invalid]);
    const error = (await mds.send(message).catch((e: unknown) => e)) as MdsValidationError;
    expect(error).toBeInstanceOf(MdsValidationError);
    expect(error.errors).toEqual([
      { pointer: '#/phone_number', detail: 'bad', code: 'invalid_phone_number' },
    ]);
    expect(seen).toHaveLength(1);
  });

  it('sends a text with characters no text may hold as their JSON escapes, so the gateway can name them', async () => {
    // A lone surrogate written as UTF-8 would arrive as U+FFFD: a different text, quietly. The JSON escape keeps it.
    const invalid = problem(422, 'validation_failed');
    const refusal = {
      pointer: '#/text',
      detail: 'Holds U+D800 (a lone surrogate) at character 6; text may not hold ...',
      code: 'invalid_characters',
    };
    (invalid.body as Record<string, unknown>).errors = [refusal];
    start([invalid]);
    const mds = new MdsClient({ baseUrl, apiKey: 'k' });
    const error = (await mds
      .send({ ...message, text: 'nul \u0000 \ud800' })
      .catch((e: unknown) => e)) as MdsValidationError;
    expect(seen[0]!.body).toContain('"text":"nul \\u0000 \\ud800"');
    expect(error).toBeInstanceOf(MdsValidationError);
    expect(error.code).toBe('validation_failed');
    expect(error.errors).toEqual([refusal]);
    expect(seen).toHaveLength(1);
  });

  it('says which URL did not answer, after retrying the network failure', async () => {
    const mds = new MdsClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'k', maxRetries: 1 });
    const error = await mds.getEvent('0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MdsNetworkError);
    expect((error as Error).message).toContain('http://127.0.0.1:1');
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
  });
});

describe('verifyWebhook', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const rotated = 'whsec_dGhlIG9sZCBzZWNyZXQgb2YgdGhpcyBlbmRwb2ludA==';
  const notification = {
    type: 'message.status',
    event_id: '0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10',
    timestamp: '2026-11-21T13:25:28.123Z',
    state: 'sent',
  };
  const signed = (body: string, key = secret, at = new Date()) => {
    const id = 'msg_2b7f0c1e9d8a4f6b8c3e5a7d9f1b3c5e';
    return {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(key).sign(id, at, body),
    };
  };

  it('answers the typed notification of a request signed with any of the secrets', () => {
    const body = JSON.stringify(notification);
    const verified = verifyWebhook(Buffer.from(body), signed(body), [rotated, secret]);
    expect(verified).toEqual(notification);
    if (verified.type === 'message.status') expect(verified.state).toBe('sent');
    expect(verifyWebhook(body, new Headers(signed(body, rotated)), [secret, rotated])).toEqual(notification);
  });

  it('refuses a changed body, another secret, a stale timestamp, missing headers and a body of another kind', () => {
    const body = JSON.stringify(notification);
    expect(() => verifyWebhook(body.replace('sent', 'failed'), signed(body), secret)).toThrow(
      MdsWebhookError,
    );
    expect(() => verifyWebhook(body, signed(body, rotated), secret)).toThrow(/not verified/);
    expect(() =>
      verifyWebhook(body, signed(body, secret, new Date(Date.now() - 6 * 60_000)), secret),
    ).toThrow(/too old/);
    expect(() => verifyWebhook(body, {}, secret)).toThrow(MdsWebhookError);
    expect(() => verifyWebhook(body, signed(body), [])).toThrow(/No webhook secret/);
    const other = JSON.stringify({ type: 'invoice.paid' });
    expect(() => verifyWebhook(other, signed(other), secret)).toThrow(/Not a notification/);
  });
});
