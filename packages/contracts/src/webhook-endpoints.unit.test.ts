import { describe, expect, it } from 'vitest';
import {
  endpointIdOf,
  endpointReceives,
  LEGACY_WEBHOOK_ENDPOINT_ID,
  newWebhookEndpointId,
  WEBHOOK_ENDPOINT_ID_PATTERN,
} from './webhook-endpoints.js';

describe('webhook endpoints', () => {
  it('makes ids that match the published pattern and differ', () => {
    const ids = new Set(Array.from({ length: 200 }, () => newWebhookEndpointId()));
    expect(ids.size).toBe(200);
    for (const id of ids) expect(id).toMatch(WEBHOOK_ENDPOINT_ID_PATTERN);
    expect(LEGACY_WEBHOOK_ENDPOINT_ID).toMatch(WEBHOOK_ENDPOINT_ID_PATTERN);
    expect('ep_short').not.toMatch(WEBHOOK_ENDPOINT_ID_PATTERN);
  });

  it('reads an event without an endpoint id as the legacy endpoint', () => {
    expect(endpointIdOf('')).toBe(LEGACY_WEBHOOK_ENDPOINT_ID);
    expect(endpointIdOf(undefined)).toBe(LEGACY_WEBHOOK_ENDPOINT_ID);
    expect(endpointIdOf('ep_0123456789abcdefghijkl')).toBe('ep_0123456789abcdefghijkl');
  });

  it('sends every type to an endpoint subscribed to none, and only its types otherwise', () => {
    expect(endpointReceives([], 'client.check')).toBe(true);
    expect(endpointReceives(['message.status'], 'message.status')).toBe(true);
    expect(endpointReceives(['message.status'], 'client.check')).toBe(false);
  });
});
