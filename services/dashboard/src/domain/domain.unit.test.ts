import { describe, expect, it } from 'vitest';
import {
  Messenger,
  newEvent,
  type ClientRequestEvent,
  type DeliveryEvent,
  type MessageEvent,
  type WebhookEvent,
} from '@mds/contracts';
import { passwordProblem, sessionExpiry, signInDelaySeconds } from './access.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { latencyBucket, LATENCY_BOUNDS_MS, quantileOf } from './latency.js';
import { projectEvent } from './projection.js';
import { can, ROLES } from './roles.js';

describe('roles', () => {
  it('owners do everything, developers all but members, viewers only read', () => {
    expect(can('owner', 'manage-members')).toBe(true);
    expect(can('developer', 'manage-members')).toBe(false);
    for (const p of [
      'manage-keys',
      'manage-webhook',
      'manage-bots',
      'send',
      'resend-webhooks',
      'reveal-secrets',
    ] as const) {
      expect([p, can('developer', p), can('viewer', p)]).toEqual([p, true, false]);
    }
    for (const role of ROLES) expect(can(role, 'read')).toBe(true);
  });
});

describe('cursors', () => {
  it('round-trip, and anything else is not one', () => {
    const cursor = { at: 1_790_000_000_123, id: '0b9f6a52-2f7e-4a8e-9a51-1c6f0e3d2b11' };
    expect(decodeCursor(encodeCursor(cursor))).toEqual(cursor);
    for (const bad of ['', 'x', '12', '12.', '.abc', '1.a b', `${'9'.repeat(17)}.x`])
      expect(decodeCursor(bad)).toBeUndefined();
  });
});

describe('latency buckets', () => {
  it('put a latency in the first bucket whose bound holds it, and read quantiles as upper bounds', () => {
    expect(latencyBucket(0)).toBe(0);
    expect(latencyBucket(25)).toBe(0);
    expect(latencyBucket(26)).toBe(1);
    expect(latencyBucket(10 * 3_600_000)).toBe(LATENCY_BOUNDS_MS.length);
    const counts = new Map([
      [latencyBucket(40), 90],
      [latencyBucket(900), 9],
      [latencyBucket(20_000), 1],
    ]);
    expect(quantileOf(counts, 0.5)).toBe(50);
    expect(quantileOf(counts, 0.9)).toBe(50);
    expect(quantileOf(counts, 0.95)).toBe(1_000);
    expect(quantileOf(counts, 0.999)).toBe(30_000);
    expect(quantileOf(new Map(), 0.5)).toBeNull();
    expect(quantileOf(new Map([[LATENCY_BOUNDS_MS.length, 1]]), 0.5)).toBe(Number.POSITIVE_INFINITY);
  });
});

describe('sign-in throttling', () => {
  const policy = { freeFailures: 3, maxDelaySeconds: 900 };
  it('lets the first failures through at once, then waits 1 s doubling up to the cap: never a hard lock', () => {
    expect([0, 1, 2].map((f) => signInDelaySeconds(f, policy))).toEqual([0, 0, 0]);
    expect([3, 4, 5, 6].map((f) => signInDelaySeconds(f, policy))).toEqual([1, 2, 4, 8]);
    expect(signInDelaySeconds(12, policy)).toBe(512);
    expect(signInDelaySeconds(13, policy)).toBe(900);
    expect(signInDelaySeconds(10_000, policy)).toBe(900);
  });
});

describe('sign-in rules', () => {
  it('want passwords of 12 characters or more that are not the email', () => {
    expect(passwordProblem('short', 'a@b.test')).toBe('too_short');
    expect(passwordProblem('a@b.test.long', 'A@B.test.long')).toBe('is_email');
    expect(passwordProblem('correct horse battery', 'a@b.test')).toBeUndefined();
    expect(passwordProblem('x'.repeat(201), 'a@b.test')).toBe('too_long');
  });
  it('end a session when idle, and at its maximum age in any case', () => {
    const start = new Date('2026-11-21T00:00:00Z');
    expect(sessionExpiry(start, start, 120, 24)).toEqual(new Date('2026-11-21T02:00:00Z'));
    expect(sessionExpiry(start, new Date('2026-11-21T23:30:00Z'), 120, 24)).toEqual(
      new Date('2026-11-22T00:00:00Z'),
    );
  });
});

describe('projection', () => {
  const base = {
    eventId: 'e1',
    occurredAt: new Date('2026-11-21T12:00:00Z'),
    companyId: 'c1',
    producer: 'p',
  };
  const request = {
    phoneNumber: '79123456789',
    text: 'hi',
    botName: '',
    buttons: [],
    apiKeyId: 'k1',
    idempotencyKey: '',
  };
  it('puts a message and its routing, outcome and webhooks on the message timeline, bot updates on none', () => {
    const accepted = projectEvent(
      newEvent<MessageEvent>({
        ...base,
        streamId: 'm1',
        event: {
          $case: 'messageAccepted',
          value: { ...request, messenger: Messenger.MESSENGER_MAX },
        },
      }),
    )!;
    expect(accepted).toMatchObject({ subjectId: 'm1', type: 'MessageAccepted', timeline: true });
    expect(accepted.change).toEqual({
      kind: 'accepted',
      record: expect.objectContaining({ event: expect.objectContaining({ $case: 'messageAccepted' }) }),
      phone: '79123456789',
      text: 'hi',
      apiKeyId: 'k1',
    });
    const routed = projectEvent(
      newEvent<DeliveryEvent>({
        ...base,
        streamId: 'b1',
        event: {
          $case: 'deliveryRequested',
          value: {
            messageId: 'm1',
            chat: { messenger: 2, botId: 'b1', chatId: '7', userId: '7' },
            botName: 'shop',
            text: 'hi',
            buttons: [],
          },
        },
      }),
    )!;
    expect([routed.subjectId, routed.change]).toEqual(['m1', { kind: 'routed', botId: 'b1', chatId: '7' }]);
    const attempt = projectEvent(
      newEvent<WebhookEvent>({
        ...base,
        streamId: 'msg_1',
        event: {
          $case: 'webhookAttempted',
          value: {
            kind: 'message.status',
            subjectId: 'm1',
            attempt: 2,
            url: 'u',
            statusCode: 0,
            latencyMs: 5,
            outcome: 4,
            error: 'refused',
            // An event written before excerpts left the log: its excerpt stays out of the read model.
            responseExcerpt: 'Hello Ivan, +79123456789',
            endpointId: 'ep_0123456789abcdefABCDEF',
          },
        },
      }),
    )!;
    expect(attempt.subjectId).toBe('m1');
    expect(attempt.change).toMatchObject({
      kind: 'webhook-attempt',
      webhookId: 'msg_1',
      endpointId: 'ep_0123456789abcdefABCDEF',
      outcome: 'gave_up',
      attempt: 2,
    });
    expect(attempt.data).toMatchObject({
      status_code: null,
      error: 'refused',
      endpoint_id: 'ep_0123456789abcdefABCDEF',
    });
    // Events written before endpoints had ids are about the single URL of older versions.
    const legacy = projectEvent(
      newEvent<WebhookEvent>({
        ...base,
        streamId: 'msg_2',
        event: {
          $case: 'webhookDelivered',
          value: { kind: 'message.status', subjectId: 'm1', attempts: 1, endpointId: '' },
        },
      }),
    )!;
    expect(legacy.change).toMatchObject({
      kind: 'webhook-finished',
      endpointId: 'ep_default',
      delivered: true,
    });
    expect(attempt.data).not.toHaveProperty('response_excerpt');
    const check = projectEvent(
      newEvent<ClientRequestEvent>({
        ...base,
        streamId: 'r1',
        event: {
          $case: 'clientCheckRequested',
          value: { phoneNumber: '79123456789', apiKeyId: 'k2', idempotencyKey: '' },
        },
      }),
    )!;
    expect(check.change).toEqual({ kind: 'request', apiKeyId: 'k2' });
    expect(accepted.data).not.toHaveProperty('metadata');
    expect(check.data).not.toHaveProperty('metadata');
  });

  it("shows a request's metadata on its timeline entry, only when it carried some", () => {
    const tagged = projectEvent(
      newEvent<ClientRequestEvent>({
        ...base,
        streamId: 'r2',
        event: {
          $case: 'phoneChangeRequested',
          value: {
            oldPhone: '79123456789',
            newPhone: '79876543210',
            apiKeyId: 'k2',
            idempotencyKey: '',
            requestMetadata: { entries: { ticket: 'T-1' } },
          },
        },
      }),
    )!;
    expect(tagged.data).toMatchObject({ old_phone: '79123456789', metadata: { ticket: 'T-1' } });
  });

  it("shows a fallback's steps: the channels asked for, each one that could not reach the person, and the one that decided", () => {
    const route = {
      channel: 0,
      current: { messenger: Messenger.MESSENGER_TELEGRAM, botName: '' },
      next: [{ messenger: Messenger.MESSENGER_MAX, botName: 'shop_max_bot' }],
      tried: [],
    };
    const message = (event: NonNullable<MessageEvent['event']>) =>
      projectEvent(newEvent<MessageEvent>({ ...base, streamId: 'm3', event }))!;
    const accepted = message({
      $case: 'messageAccepted',
      value: { ...request, messenger: Messenger.MESSENGER_TELEGRAM, fallback: route },
    });
    expect(accepted.data.fallback).toEqual([{ service: 'max', bot_name: 'shop_max_bot' }]);
    const attempt = {
      messenger: Messenger.MESSENGER_TELEGRAM,
      botName: 'shop_bot',
      botId: 'b1',
      errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
      errorDescription: 'never linked',
      failedAt: new Date('2026-11-21T12:00:01Z'),
    };
    const failed = message({
      $case: 'messageAttemptFailed',
      value: {
        route: { ...route, current: { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop_bot' } },
        attempt,
      },
    });
    expect(failed).toMatchObject({ type: 'MessageAttemptFailed', timeline: true, change: { kind: 'none' } });
    expect(failed.data).toEqual({
      channel: 0,
      service: 'telegram',
      bot_name: 'shop_bot',
      bot_id: 'b1',
      error_code: 'CLIENT_NOT_LINKED_TO_BOT',
      error_description: 'never linked',
      failed_at: '2026-11-21T12:00:01.000Z',
      next: { service: 'max', bot_name: 'shop_max_bot' },
    });
    const sent = message({
      $case: 'messageSent',
      value: {
        botId: 'b2',
        providerMessageId: '7',
        attempts: 1,
        fallback: {
          channel: 1,
          current: { messenger: 2, botName: 'shop_max_bot' },
          next: [],
          tried: [attempt],
        },
      },
    });
    expect(sent.change.kind).toBe('outcome');
    expect(sent.data.fallback).toEqual({
      channel: 1,
      service: 'max',
      bot_name: 'shop_max_bot',
      attempts: [{ service: 'telegram', bot_name: 'shop_bot', error_code: 'CLIENT_NOT_LINKED_TO_BOT' }],
    });
    // A message without a fallback: its entries as before.
    const plain = message({
      $case: 'messageSent',
      value: { botId: 'b2', providerMessageId: '7', attempts: 1 },
    });
    expect(plain.data).not.toHaveProperty('fallback');
  });
});
