import type { MessageEvent } from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import { messageAccepted, type Acceptance } from './events.js';

const acceptance: Acceptance = {
  requestId: '0b8e3f7a-9d1c-4a52-8f1e-2c3d4e5f6a7b',
  companyId: 'c1',
  apiKeyId: 'k1',
  idempotencyKey: '',
  at: new Date('2026-11-29T12:00:00Z'),
};
const body = { phone_number: '79123456789', text: 'Code 4711', service: 'telegram' as const };
const acceptedOf = (b: Parameters<typeof messageAccepted>[1]) => {
  const event = (messageAccepted(acceptance, b).record as MessageEvent).event;
  return event?.$case === 'messageAccepted' ? event.value : undefined;
};

describe('the accepted message event', () => {
  it('carries the moment it expires, its acceptance plus ttl_seconds', () => {
    expect(acceptedOf({ ...body, ttl_seconds: 300 })?.expiresAt).toEqual(new Date('2026-11-29T12:05:00Z'));
  });

  it('has no expiry without ttl_seconds', () => {
    expect(acceptedOf(body)?.expiresAt).toBeUndefined();
  });
});
