// The webhook inspector over real HTTP: deliveries signed by the standardwebhooks library, forged ones,
// its control API and its page.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import {
  closeAll,
  controlFailure,
  deliver,
  newSecret,
  startSimulator,
  statusBody,
  type TestSimulator,
} from '../../test/simulator.js';

afterEach(closeAll);

interface WebhookView {
  seq: number;
  webhook_id: string | null;
  type: string | null;
  event_id: string | null;
  state: string | null;
  error_code: string | null;
  verified: boolean;
  reason: string;
  detail: string;
  headers: Record<string, string>;
  body: unknown;
  raw_body: string;
}

async function webhooks(sim: TestSimulator, name: string, query = ''): Promise<WebhookView[]> {
  return (await sim.control.call<{ webhooks: WebhookView[] }>('GET', `/inspector/${name}/webhooks${query}`))
    .webhooks;
}

describe('webhook inspector', () => {
  it('verifies a delivery signed with a registered secret and keeps its fields, headers and body', async () => {
    const sim = await startSimulator();
    const [current, previous] = [newSecret(), newSecret()];
    expect(await sim.control.call('PUT', '/inspector/demo', { secrets: [current, previous] })).toEqual({
      name: 'demo',
      secrets: 2,
      latest_seq: 0,
      hooks_url: `${sim.base}/inspector/demo/hooks`,
      page_url: `${sim.base}/inspector/demo`,
    });
    const body = statusBody('failed', {
      error_code: 'CLIENT_NOT_FOUND',
      error_description: 'no such client',
    });
    const answer = await deliver(sim, 'demo', body, [current]);
    expect(answer).toMatchObject({ status: 200, body: { received: 1, verified: true, reason: 'verified' } });

    const [seen] = await webhooks(sim, 'demo');
    const sent = JSON.parse(body) as Record<string, string>;
    expect(seen).toMatchObject({
      seq: 1,
      webhook_id: answer.id,
      type: 'message.status',
      event_id: sent.event_id,
      state: 'failed',
      error_code: 'CLIENT_NOT_FOUND',
      error_description: 'no such client',
      verified: true,
      reason: 'verified',
      detail: 'signature verified with secret 1 of 2',
      method: 'POST',
      body: sent,
      raw_body: body,
    });
    expect(seen!.headers).toMatchObject({ 'webhook-id': answer.id, 'content-type': 'application/json' });
    expect(await sim.control.call('GET', '/inspector/demo')).toMatchObject({ secrets: 2, latest_seq: 1 });
  });

  it('does not verify a forged, altered, unsigned, stale or unknown-secret delivery, and says why', async () => {
    const sim = await startSimulator();
    const secret = newSecret();
    // Before any secret is registered nothing can verify. Registering one verifies such deliveries again,
    // unless (as this one, signed 10 minutes ago) their timestamp is too old by then.
    await deliver(sim, 'demo', statusBody(), [secret], new Date(Date.now() - 10 * 60_000));
    const early = await deliver(sim, 'demo', statusBody(), [secret]);
    expect(early.body).toMatchObject({ verified: false, reason: 'no_secret' });
    await sim.control.call('PUT', '/inspector/demo', { secrets: [secret] });
    await deliver(sim, 'demo', statusBody(), [newSecret()]);
    await deliver(sim, 'demo', statusBody(), []);
    await deliver(sim, 'demo', statusBody(), [secret], new Date(Date.now() - 10 * 60_000));
    const forged = await fetch(`${sim.base}/inspector/demo/hooks`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${randomBytes(32).toString('base64')}`,
      },
      body: statusBody(),
    });
    expect(forged.status).toBe(200);
    // Signed, then altered on the way.
    const id = 'msg_altered';
    const now = new Date();
    const body = statusBody('sent');
    await fetch(`${sim.base}/inspector/demo/hooks`, {
      method: 'POST',
      headers: {
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, now, body),
      },
      body: body.replace('"sent"', '"failed"'),
    });
    await deliver(sim, 'demo', statusBody(), [secret]);

    const seen = await webhooks(sim, 'demo');
    expect(seen.map((w) => [w.seq, w.verified, w.reason])).toEqual([
      [8, true, 'verified'],
      [7, false, 'no_matching_signature'],
      [6, false, 'no_matching_signature'],
      [5, false, 'timestamp_too_old'],
      [4, false, 'missing_headers'],
      [3, false, 'no_matching_signature'],
      [2, true, 'verified'],
      [1, false, 'no_secret'],
    ]);
    expect(seen.at(-1)!.detail).toContain('no secret registered');
    expect((await webhooks(sim, 'demo', '?limit=2')).map((w) => w.seq)).toEqual([8, 7]);
    // Names are separate inspectors.
    expect(await webhooks(sim, 'other')).toEqual([]);
  });

  it('keeps the last 500 deliveries of a name', async () => {
    const sim = await startSimulator();
    for (let i = 0; i < 503; i++) expect((await deliver(sim, 'busy', statusBody(), [])).status).toBe(200);
    const kept = await webhooks(sim, 'busy');
    expect(kept).toHaveLength(500);
    expect([kept[0]!.seq, kept.at(-1)!.seq]).toEqual([503, 4]);
    await sim.control.call('DELETE', '/inspector/busy/webhooks');
    expect(await webhooks(sim, 'busy')).toEqual([]);
  });

  it('refuses bad input with the usual error shape', async () => {
    const sim = await startSimulator();
    const invalid = (message: string) => ({
      status: 400,
      body: { error: { code: 'invalid_request', message: expect.stringContaining(message) as string } },
    });
    expect(await controlFailure(sim.control.call('PUT', '/inspector/demo', {}))).toEqual(invalid('secrets'));
    expect(await controlFailure(sim.control.call('PUT', '/inspector/demo', { secrets: 'whsec_x' }))).toEqual(
      invalid('secrets'),
    );
    expect(await controlFailure(sim.control.call('PUT', '/inspector/demo', { secrets: ['plain'] }))).toEqual(
      invalid('secrets.0: a secret starts with "whsec_"'),
    );
    expect(
      await controlFailure(
        sim.control.call('PUT', '/inspector/demo', { secrets: [newSecret(), 'whsec_!!'] }),
      ),
    ).toEqual(invalid('secrets.1: a secret is "whsec_" followed by base64'));
    expect(
      await controlFailure(
        sim.control.call('PUT', '/inspector/demo', { secrets: Array.from({ length: 21 }, newSecret) }),
      ),
    ).toEqual(invalid('secrets'));
    expect(await controlFailure(sim.control.call('PUT', '/inspector/no%20spaces', { secrets: [] }))).toEqual(
      invalid('name'),
    );
    expect(await controlFailure(sim.control.call('GET', '/inspector/demo/webhooks?limit=0'))).toEqual(
      invalid('limit'),
    );
    const notJson = await fetch(`${sim.base}/control/inspector/demo`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"secrets": [',
    });
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ error: { code: 'invalid_request' } });

    const badName = await fetch(`${sim.base}/inspector/${'x'.repeat(65)}/hooks`, {
      method: 'POST',
      body: '{}',
    });
    expect(badName.status).toBe(400);
    expect(await badName.json()).toMatchObject({ error: { code: 'invalid_request' } });
    const tooBig = await fetch(`${sim.base}/inspector/demo/hooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x'.repeat(70_000) }),
    });
    expect(tooBig.status).toBe(413);
    expect(await tooBig.json()).toMatchObject({ error: { code: 'invalid_request' } });
    const get = await fetch(`${sim.base}/inspector/demo/hooks`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(await webhooks(sim, 'demo')).toEqual([]);
  });

  it('shows deliveries on its page, linked from the inbox, and forgets them on reset', async () => {
    const sim = await startSimulator();
    const secret = newSecret();
    await sim.control.call('PUT', '/inspector/demo', { secrets: [secret] });
    const { id } = await deliver(sim, 'demo', statusBody(), [secret]);
    await deliver(sim, 'demo', statusBody(), []);
    const inbox = await (await fetch(sim.base)).text();
    expect(inbox).toContain('<a href="/inspector" data-testid="inspector-link">webhook inspector</a>');
    const index = await fetch(`${sim.base}/inspector`);
    expect(index.headers.get('content-type')).toContain('text/html');
    expect(await index.text()).toContain('<a href="/inspector/demo">demo</a>');
    const page = await (await fetch(`${sim.base}/inspector/demo`)).text();
    expect(page).toContain(`<dd>${id}</dd>`);
    expect(page).toMatch(/data-testid="verdict-1"\s*>verified</);
    expect(page).toMatch(/data-testid="verdict-2"\s*>not verified: missing_headers</);

    await sim.control.call('POST', '/reset');
    expect(await sim.control.call('GET', '/inspector/demo')).toMatchObject({ secrets: 0, latest_seq: 0 });
    expect(await webhooks(sim, 'demo')).toEqual([]);
  });
});
