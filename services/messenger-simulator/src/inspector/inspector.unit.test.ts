import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { WebhookInspector } from './inspector.js';
import { renderInspector, renderInspectorIndex } from './page.js';
import { secretProblem, verifyDelivery } from './verify.js';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const BODY =
  '{"type":"message.status","event_id":"22222222-2222-4222-8222-222222222222","timestamp":"2026-01-15T12:00:00.000Z","state":"sent"}';

/** Headers as the dispatcher sends them, signed by the standardwebhooks library itself. */
function signed(body: string, secrets: string[], at = new Date(), id = 'msg_0123') {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(id, at, body)).join(' '),
  };
}

describe('verifying a delivery', () => {
  it('verifies a delivery signed with a registered secret, and says which one', () => {
    const [current, previous] = [newSecret(), newSecret()];
    expect(verifyDelivery(BODY, signed(BODY, [previous]), [current, previous])).toEqual({
      verified: true,
      reason: 'verified',
      detail: 'signature verified with secret 2 of 2',
    });
    // The dispatcher signs with both while a secret is rotated out: either one registered is enough.
    expect(verifyDelivery(BODY, signed(BODY, [current, previous]), [previous]).verified).toBe(true);
  });

  it('says why a delivery does not verify', () => {
    const secret = newSecret();
    const headers = signed(BODY, [secret]);
    const reason = (body: string, h: Record<string, string>, secrets = [secret]) =>
      verifyDelivery(body, h, secrets).reason;
    expect(reason(BODY, { 'content-type': 'application/json' })).toBe('missing_headers');
    expect(verifyDelivery(BODY, { ...headers, 'webhook-signature': '' }, [secret])).toEqual({
      verified: false,
      reason: 'missing_headers',
      detail: 'missing webhook-signature',
    });
    expect(reason(BODY, headers, [])).toBe('no_secret');
    expect(reason(BODY, headers, [newSecret()])).toBe('no_matching_signature');
    expect(reason(BODY.replace('sent', 'failed'), headers)).toBe('no_matching_signature');
    expect(reason(BODY, { ...headers, 'webhook-id': 'msg_other' })).toBe('no_matching_signature');
    expect(reason(BODY, { ...headers, 'webhook-signature': 'v1,Zm9yZ2Vk' })).toBe('no_matching_signature');
    expect(reason(BODY, { ...headers, 'webhook-timestamp': 'yesterday' })).toBe('invalid_timestamp');
    const tenMinutes = 10 * 60_000;
    expect(reason(BODY, signed(BODY, [secret], new Date(Date.now() - tenMinutes)))).toBe('timestamp_too_old');
    expect(reason(BODY, signed(BODY, [secret], new Date(Date.now() + tenMinutes)))).toBe('timestamp_too_new');
  });

  it('accepts only secrets the library can use', () => {
    expect(secretProblem(newSecret())).toBeUndefined();
    expect(secretProblem('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw')).toBe('a secret starts with "whsec_"');
    expect(secretProblem('whsec_')).toBe('a secret is "whsec_" followed by base64');
    expect(secretProblem('whsec_not base64!')).toBe('a secret is "whsec_" followed by base64');
  });
});

describe('the inspector', () => {
  it('keeps what arrived per name with the fields of a message.status webhook, newest first', () => {
    const inspector = new WebhookInspector();
    const secret = newSecret();
    inspector.setSecrets('demo', [secret]);
    const failed = JSON.stringify({
      type: 'message.status',
      event_id: 'e2',
      state: 'failed',
      error_code: 'CLIENT_NOT_FOUND',
      error_description: 'no such client',
    });
    inspector.receive('demo', { method: 'POST', headers: signed(BODY, [secret]), body: BODY, at: 1 });
    inspector.receive('demo', {
      method: 'POST',
      headers: signed(failed, [secret], new Date(), 'msg_2'),
      body: failed,
      at: 2,
    });
    inspector.receive('other', { method: 'POST', headers: {}, body: 'not json', at: 3 });
    const [second, first] = inspector.deliveries('demo');
    expect(first).toMatchObject({
      seq: 1,
      webhookId: 'msg_0123',
      type: 'message.status',
      eventId: '22222222-2222-4222-8222-222222222222',
      state: 'sent',
      errorCode: undefined,
      verified: true,
    });
    expect(second).toMatchObject({
      seq: 2,
      webhookId: 'msg_2',
      state: 'failed',
      errorCode: 'CLIENT_NOT_FOUND',
      errorDescription: 'no such client',
      verified: true,
    });
    expect(inspector.deliveries('other')).toEqual([
      expect.objectContaining({ seq: 3, json: undefined, body: 'not json', reason: 'missing_headers' }),
    ]);
    expect(inspector.deliveries('nobody')).toEqual([]);
    expect(inspector.names().map((n) => [n.name, n.secrets, n.deliveries])).toEqual([
      ['other', 0, 1],
      ['demo', 1, 2],
    ]);
  });

  it('verifies again what arrived before its secrets were registered', () => {
    const inspector = new WebhookInspector();
    const secret = newSecret();
    const receive = (body: string, headers: Record<string, string>) =>
      inspector.receive('demo', { method: 'POST', headers, body, at: 1 });
    const fresh = receive(BODY, signed(BODY, [secret]));
    const stale = receive(BODY, signed(BODY, [secret], new Date(Date.now() - 10 * 60_000)));
    const forged = receive(BODY, signed(BODY, [newSecret()]));
    expect([fresh, stale, forged].map((d) => d.reason)).toEqual(['no_secret', 'no_secret', 'no_secret']);

    inspector.setSecrets('demo', [secret]);
    expect(fresh).toMatchObject({ verified: true, reason: 'verified' });
    expect(forged).toMatchObject({ verified: false, reason: 'no_matching_signature' });
    // Too old now, but not when it arrived: what it said then still holds.
    expect(stale).toMatchObject({ verified: false, reason: 'no_secret' });
  });

  it('keeps at most perName deliveries per name and forgets the least recently used name beyond names', () => {
    const inspector = new WebhookInspector({ perName: 3, names: 2 });
    for (let at = 1; at <= 5; at++) inspector.receive('a', { method: 'POST', headers: {}, body: '{}', at });
    expect(inspector.deliveries('a').map((d) => d.receivedAt)).toEqual([5, 4, 3]);
    expect(inspector.deliveries('a', 1).map((d) => d.receivedAt)).toEqual([5]);
    inspector.setSecrets('b', [newSecret()]);
    inspector.receive('a', { method: 'POST', headers: {}, body: '{}', at: 6 });
    inspector.setSecrets('c', []);
    expect(inspector.names().map((n) => n.name)).toEqual(['c', 'a']);
    expect(inspector.secretCount('b')).toBe(0);
    inspector.clearDeliveries('a');
    expect(inspector.deliveries('a')).toEqual([]);
    inspector.reset();
    expect(inspector.names()).toEqual([]);
  });
});

describe('the inspector page', () => {
  it('escapes whatever arrived and shows the verdict of each delivery', () => {
    const inspector = new WebhookInspector();
    const secret = newSecret();
    inspector.setSecrets('demo', [secret]);
    const body = JSON.stringify({
      type: 'message.status',
      event_id: '<img src=x onerror=alert(1)>',
      state: 'sent',
    });
    inspector.receive('demo', { method: 'POST', headers: signed(body, [secret]), body, at: 0 });
    inspector.receive('demo', {
      method: 'POST',
      headers: { 'x-evil': '<script>alert(1)</script>' },
      body: '</pre><script>alert(2)</script>',
      at: 1000,
    });
    const page = renderInspector(inspector, 'demo', 'http://127.0.0.1:8090');
    expect(page).not.toContain('<img src=x');
    expect(page).not.toContain('<script>alert');
    expect(page).toContain('&lt;script&gt;alert(2)&lt;/script&gt;');
    expect(page).toContain('<dd>&lt;img src=x onerror=alert(1)&gt;</dd>');
    expect(page).toContain('<code>http://127.0.0.1:8090/inspector/demo/hooks</code>');
    expect([...page.matchAll(/data-testid="verdict-(\d+)"\s*>([^<]*)</g)].map((m) => [m[1], m[2]])).toEqual([
      ['2', 'not verified: missing_headers'],
      ['1', 'verified'],
    ]);
    expect(page).toContain('1 signing secret registered.');
    expect(renderInspector(inspector, 'fresh', 'x')).toContain('No signing secret registered');
    expect(renderInspectorIndex(inspector, 'x')).toContain('<a href="/inspector/demo">demo</a>');
  });
});
