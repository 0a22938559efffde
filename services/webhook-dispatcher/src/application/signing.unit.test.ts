import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { signatureHeader, webhookHeaders } from './signing.js';

describe('Standard Webhooks signing', () => {
  it('matches the specification test vector', () => {
    expect(
      signatureHeader('msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}', [
        'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      ]),
    ).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
  });

  it('verifies with the standardwebhooks library under each secret while one is rotated out', () => {
    const current = `whsec_${Buffer.from('a'.repeat(32)).toString('base64')}`;
    const previous = `whsec_${Buffer.from('b'.repeat(32)).toString('base64')}`;
    const body = '{"type":"message.status","state":"sent"}';
    const headers = webhookHeaders({
      webhookId: 'msg_0123',
      timestampSeconds: Math.floor(Date.now() / 1000),
      body,
      secrets: [current, previous],
    });
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(current).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(previous).verify(body, headers)).toEqual(JSON.parse(body));
    const stranger = `whsec_${Buffer.from('c'.repeat(32)).toString('base64')}`;
    expect(() => new Webhook(stranger).verify(body, headers)).toThrow();
    expect(() => new Webhook(current).verify(`${body} `, headers)).toThrow();
  });
});
