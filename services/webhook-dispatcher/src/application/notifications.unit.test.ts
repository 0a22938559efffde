import { randomUUID } from 'node:crypto';
import { derivedEventId } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import type { Notification } from '../domain/notifications.js';
import { deliveriesOf, EndpointsUnavailableError, fanOut } from './notifications.js';
import type { Endpoint } from './ports.js';

const endpoint = (endpointId: string, eventTypes: string[], enabled = true): Endpoint => ({
  endpointId,
  url: `https://example.com/${endpointId}`,
  eventTypes,
  enabled,
  rateLimitPerSecond: undefined,
  secrets: [{ secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }],
});

const notification = (kind: Notification['kind'], companyId = 'c-1'): Notification => {
  const id = randomUUID();
  return {
    kind,
    companyId,
    subjectId: id,
    sourceEventId: id,
    body: { type: kind, event_id: id, timestamp: '2026-11-21T12:00:00.000Z', state: 'sent' } as never,
  };
};

const STATUS_ONLY = 'ep_0000000000000000000001';
const CHECKS_ONLY = 'ep_0000000000000000000002';
const OFF = 'ep_0000000000000000000003';
const endpoints = [
  endpoint('ep_default', []),
  endpoint(STATUS_ONLY, ['message.status']),
  endpoint(CHECKS_ONLY, ['client.check']),
  endpoint(OFF, [], false),
];

describe('a notification fanned out to endpoints', () => {
  it('goes to every endpoint subscribed to its type (none subscribed: every type), disabled ones too', () => {
    const at = new Date();
    const to = (kind: Notification['kind']) =>
      deliveriesOf(notification(kind), endpoints, at, {}).map((d) => d.endpointId);
    // A disabled endpoint's delivery is stored to fail at once unsent (recoverable once re-enabled).
    expect(to('message.status')).toEqual(['ep_default', STATUS_ONLY, OFF]);
    expect(to('client.check')).toEqual(['ep_default', CHECKS_ONLY, OFF]);
    expect(to('client.phone_changed')).toEqual(['ep_default', OFF]);
    expect(deliveriesOf(notification('message.status'), [], at, {})).toEqual([]);
  });

  it('gives each endpoint its own webhook-id, the same every time; ep_default keeps the one it had', () => {
    const n = notification('message.status');
    const [first, second] = [
      deliveriesOf(n, endpoints, new Date(), {}),
      deliveriesOf(n, endpoints, new Date(), {}),
    ];
    expect(first.map((d) => d.webhookId)).toEqual(second.map((d) => d.webhookId));
    const [legacy, other] = first;
    // The derivation of versions before endpoints, spelt out.
    expect(legacy!.webhookId).toBe(`msg_${derivedEventId(n.sourceEventId, 'webhook').replaceAll('-', '')}`);
    expect(other!.webhookId).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(other!.webhookId).not.toBe(legacy!.webhookId);
    // One body, the same bytes for every endpoint.
    expect(new Set(first.map((d) => d.body)).size).toBe(1);
  });

  it('reads each company once per batch, and a failure to read is retriable (the batch waits)', async () => {
    const asked: string[] = [];
    const items = ['a', 'b', 'a'].map((c) => ({
      notification: notification('message.status', c),
      trace: {},
    }));
    const out = await fanOut(
      { endpoints: (c) => (asked.push(c), Promise.resolve([endpoint('ep_default', [])])) },
      items,
      new Date(),
    );
    expect(asked.sort()).toEqual(['a', 'b']);
    expect(out.map((o) => o.delivery.companyId)).toEqual(['a', 'b', 'a']);
    const failing = fanOut({ endpoints: () => Promise.reject(new Error('refused')) }, items, new Date());
    await expect(failing).rejects.toBeInstanceOf(EndpointsUnavailableError);
    await expect(failing).rejects.toMatchObject({ retriable: true });
  });
});
