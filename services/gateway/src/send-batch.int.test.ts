import type { MessageEvent } from '@mds/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  collect,
  companyWithKey,
  eventually,
  messageTopic,
  post,
  startStack,
  type TestStack,
} from '../test/support.js';

// POST /api/v1/send/batch against a real gateway, Kafka and PostgreSQL: each message accepted or refused on its
// own, per-message idempotency, a token per message, and the body's own limits.

let stack: TestStack;
let messages: Awaited<ReturnType<typeof collect<MessageEvent>>>;

beforeAll(async () => {
  // A key's send bucket: 10 tokens refilling one per 10 s, so what a test admits is the bucket however slow the
  // machine; each test has its own company and key.
  stack = await startStack({
    RATE_LIMIT_SEND_PER_KEY: '0.1',
    RATE_LIMIT_BURST_SECONDS: '100',
  });
  messages = await collect(stack, messageTopic);
});
afterAll(async () => {
  await messages?.stop();
  await stack?.stop();
});

type Result = { status: 'accepted'; event_id: string } | { status: 'rejected'; errors: object[] };

const message = (n: number, extra: object = {}) => ({
  phone_number: '79123456789',
  service: 'telegram',
  text: `Order ${n} has shipped`,
  ...extra,
});

async function batch(apiKey: string, items: unknown[], headers: Record<string, string> = {}) {
  const response = await post(stack, '/send/batch', { messages: items }, { 'x-api-key': apiKey, ...headers });
  return { response, body: (await response.json()) as { results: Result[] } & Record<string, unknown> };
}

const idOf = (r: Result | undefined) => (r as { event_id: string }).event_id;
const published = (eventId: string) => messages.events.filter((e) => e.metadata.streamId === eventId);

describe('POST /api/v1/send/batch', () => {
  it('accepts the valid messages and rejects each invalid one with its own errors, in order', async () => {
    const { apiKey } = await companyWithKey(stack, 'Batch mixed');
    const { response, body } = await batch(apiKey, [
      message(1),
      message(2, { phone_number: '89123456789' }),
      message(3, { bot_name: 'shop_bot', idempotency_key: 'mixed-3' }),
      { ...message(4), color: 'red' },
      'not an object',
      message(6, { idempotency_key: '' }),
    ]);
    expect(response.status).toBe(202);
    expect(response.headers.get('ratelimit-policy')).toMatch(/"send-key";q=10;w=100/);
    expect(response.headers.get('ratelimit')).toMatch(/^"send";r=\d+;t=100$/);
    expect(body.results).toEqual([
      { status: 'accepted', event_id: expect.any(String) },
      {
        status: 'rejected',
        errors: [
          { pointer: '#/messages/1/phone_number', code: 'invalid_phone_number', detail: expect.any(String) },
        ],
      },
      { status: 'accepted', event_id: expect.any(String) },
      {
        status: 'rejected',
        errors: [{ pointer: '#/messages/3/color', code: 'unknown_field', detail: 'Unknown field "color"' }],
      },
      {
        status: 'rejected',
        errors: [{ pointer: '#/messages/4', code: 'invalid_type', detail: expect.any(String) }],
      },
      {
        status: 'rejected',
        errors: [
          {
            pointer: '#/messages/5/idempotency_key',
            code: 'invalid_idempotency_key',
            detail: expect.any(String),
          },
        ],
      },
    ]);
    const [first, , third] = body.results;
    // In the log before the answer, as a single send's MessageAccepted, the item's key beside it.
    for (const [result, key] of [
      [first, ''],
      [third, 'mixed-3'],
    ] as const) {
      const [event] = await eventually('the event', () =>
        published(idOf(result)).length > 0 ? published(idOf(result)) : undefined,
      );
      expect(event!.metadata.type).toBe('MessageAccepted');
      expect(event!.event).toMatchObject({ $case: 'messageAccepted', value: { idempotencyKey: key } });
    }
  });

  it('takes a fallback on each message as a single send does, and refuses each bad one at its message', async () => {
    const { apiKey } = await companyWithKey(stack, 'Batch fallback');
    const { body } = await batch(apiKey, [
      message(1, { fallback: [{ service: 'max' }] }),
      message(2, { fallback: [{ service: 'telegram' }] }),
      message(3, { fallback: [] }),
    ]);
    expect(body.results).toEqual([
      { status: 'accepted', event_id: expect.any(String) },
      {
        status: 'rejected',
        errors: [
          {
            pointer: '#/messages/1/fallback/0',
            code: 'fallback_duplicate_channel',
            detail: expect.any(String),
          },
        ],
      },
      { status: 'accepted', event_id: expect.any(String) },
    ]);
    const [withFallback] = await eventually('the event', () => {
      const events = published(idOf(body.results[0]));
      return events.length > 0 ? events : undefined;
    });
    expect(withFallback!.event).toMatchObject({
      $case: 'messageAccepted',
      value: { fallback: { channel: 0, next: [{ messenger: 2, botName: '' }], tried: [] } },
    });
    const [without] = await eventually('the event', () => {
      const events = published(idOf(body.results[2]));
      return events.length > 0 ? events : undefined;
    });
    expect((without!.event as { value: { fallback?: unknown } }).value.fallback).toBeUndefined();
  });

  it('answers each message by its idempotency_key as a single send would, and publishes it once', async () => {
    const { apiKey } = await companyWithKey(stack, 'Batch idempotent');
    const items = [message(1, { idempotency_key: 'idem-1' }), message(2, { idempotency_key: 'idem-2' })];
    const first = await batch(apiKey, items);
    expect(first.body.results.map((r) => r.status)).toEqual(['accepted', 'accepted']);

    // The same batch again: the same event ids, nothing new in the log.
    const again = await batch(apiKey, items);
    expect(again.body.results).toEqual(first.body.results);
    // A single send under one of the keys with the same body is the same message.
    const single = await post(stack, '/send', message(2), {
      'x-api-key': apiKey,
      'idempotency-key': 'idem-2',
    });
    expect(single.headers.get('idempotent-replayed')).toBe('true');
    expect(((await single.json()) as { event_id: string }).event_id).toBe(idOf(first.body.results[1]));

    // Another body under a key, and a key twice in one batch: those messages alone are rejected.
    const mixed = await batch(apiKey, [
      message(9, { idempotency_key: 'idem-1' }),
      message(3, { idempotency_key: 'idem-3' }),
      message(3, { idempotency_key: 'idem-3' }),
    ]);
    expect(mixed.body.results).toEqual([
      {
        status: 'rejected',
        errors: [{ pointer: '#/messages/0', code: 'idempotency_key_reused', detail: expect.any(String) }],
      },
      { status: 'accepted', event_id: expect.any(String) },
      {
        status: 'rejected',
        errors: [
          { pointer: '#/messages/2', code: 'idempotency_request_in_progress', detail: expect.any(String) },
        ],
      },
    ]);

    await eventually('the events', () =>
      published(idOf(mixed.body.results[1])).length > 0 ? true : undefined,
    );
    // Later events would have arrived by now (they are written before the answers).
    for (const result of first.body.results) expect(published(idOf(result))).toHaveLength(1);
  });

  it('spends a token of the key per message: those beyond are rejected, and a batch with none is a 429', async () => {
    const { apiKey } = await companyWithKey(stack, 'Batch limited');
    const { response, body } = await batch(
      apiKey,
      Array.from({ length: 14 }, (_, n) => message(n)),
    );
    expect(response.status).toBe(202);
    expect(body.results.slice(0, 10).every((r) => r.status === 'accepted')).toBe(true);
    expect(body.results.slice(10)).toEqual(
      [10, 11, 12, 13].map((n) => ({
        status: 'rejected',
        errors: [
          { pointer: `#/messages/${n}`, code: 'rate_limited', detail: expect.stringMatching(/API key/) },
        ],
      })),
    );
    const none = await batch(apiKey, [message(20), message(21)]);
    expect(none.response.status).toBe(429);
    expect(Number(none.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(none.body).toMatchObject({ code: 'rate_limited', violated_policy: 'send-key' });
  });

  it('takes 500 messages of the longest text; refuses a body that is not a batch of 1 to 500 messages or is over 16 MiB, an Idempotency-Key header, a key without send', async () => {
    const { apiKey } = await companyWithKey(stack, 'Batch malformed');
    for (const [body, pointer, code] of [
      [[message(1)], '#/', 'invalid_type'],
      [{}, '#/messages', 'required'],
      [{ messages: [] }, '#/messages', 'too_short'],
      [{ messages: Array.from({ length: 501 }, () => ({})) }, '#/messages', 'too_long'],
      [{ messages: [message(1)], extra: 1 }, '#/extra', 'unknown_field'],
    ] as const) {
      const response = await post(stack, '/send/batch', body, { 'x-api-key': apiKey });
      expect(response.status).toBe(422);
      expect(await response.json()).toMatchObject({
        code: 'validation_failed',
        errors: [{ pointer, code }],
      });
    }
    const header = await batch(apiKey, [message(1)], { 'idempotency-key': 'whole' });
    expect(header.response.status).toBe(400);
    expect(header.body.code).toBe('idempotency_key_not_supported');

    // 500 messages of the longest text, every character a \u escape: within the default 16 MiB.
    const longest = { ...message(0), text: 'я'.repeat(4096), idempotency_key: 'k'.repeat(255) };
    const escaped = (messages: unknown[]) => JSON.stringify({ messages }).replaceAll('я', '\\u044f');
    const big = escaped(Array.from({ length: 500 }, () => longest));
    expect(big.length).toBeGreaterThan(12_000_000);
    const taken = await post(stack, '/send/batch', big, { 'x-api-key': apiKey });
    expect(taken.status).toBe(202);
    expect(((await taken.json()) as { results: unknown[] }).results).toHaveLength(500);
    const large = await post(stack, '/send/batch', escaped(Array.from({ length: 700 }, () => longest)), {
      'x-api-key': apiKey,
    });
    expect(large.status).toBe(413);
    expect(await large.json()).toMatchObject({ code: 'body_too_large' });

    const get = await fetch(`${stack.gatewayUrl}/api/v1/send/batch`, { headers: { 'x-api-key': apiKey } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');

    const { apiKey: checkOnly } = await companyWithKey(stack, 'Batch checker', ['check']);
    const forbidden = await batch(checkOnly, [message(1)]);
    expect(forbidden.response.status).toBe(403);
    expect(forbidden.body).toMatchObject({ code: 'insufficient_scope', required_scope: 'send' });
  });
});
