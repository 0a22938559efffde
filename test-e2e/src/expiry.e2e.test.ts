// ttl_seconds through the real stack (simulator, client-registry, senders, dispatcher, gateway): a message
// with a generous expiry is delivered as usual; one whose expiry passes while client-registry is down (so
// nothing routes it) ends failed EXPIRED once the registry is back, in one webhook and the read API, and
// never reaches the person.
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack } from './harness.js';
import {
  startDeliveryStack,
  type DemoCompany,
  type Sandbox,
  type SimulatedBot,
  type SimulatedPerson,
  type WebhookReceiver,
} from './sandbox.js';

const WAIT_MS = 60_000;

let stack: Stack;
let sandbox: Sandbox;
let company: DemoCompany & { webhooks: WebhookReceiver };
let bot: SimulatedBot;
let person: SimulatedPerson;

beforeAll(async () => {
  // The gateway keeps API keys as in production, so it takes sends while client-registry is down.
  ({ stack, sandbox } = await startDeliveryStack({ env: { gateway: { API_KEY_CACHE_TTL_MS: '120000' } } }));
  company = await sandbox.companyWithWebhooks('Expiring');
  bot = await sandbox.bot(company.companyId, 'telegram', 'codes');
  person = await sandbox.linkedPerson(company.companyId, bot, 'Ivan');
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
});

const statuses = (eventId: string) =>
  company.webhooks.about(eventId).filter((w) => w.payload?.type === 'message.status');

describe('ttl_seconds', () => {
  it('delivers a message with a generous ttl as usual', async () => {
    const text = `Your code ${Date.now()}`;
    const eventId = await sandbox.send(company.apiKey, {
      phone_number: person.phone,
      service: 'telegram',
      text,
      ttl_seconds: 3_600,
    });
    expect(await sandbox.finishedState(company.apiKey, eventId, WAIT_MS)).toMatchObject({ state: 'sent' });
    expect((await company.webhooks.waitFor(eventId, WAIT_MS)).payload).toMatchObject({ state: 'sent' });
    expect((await sandbox.inbox(person, bot)).map((m) => m.text)).toContain(text);
  });

  it('fails EXPIRED, once, a message whose expiry passed while client-registry was down; never sent', async () => {
    const text = `A code that expires ${Date.now()}`;
    const registry = stack.service('client-registry');
    await registry.stop();
    let eventId: string;
    try {
      eventId = await sandbox.send(company.apiKey, {
        phone_number: person.phone,
        service: 'telegram',
        text,
        ttl_seconds: 10,
      });
      // Past its expiry, with nothing to route it meanwhile.
      await sleep(11_000);
      expect((await sandbox.sdk(company.apiKey).getEvent(eventId)).state).toBe('new');
    } finally {
      await registry.start();
    }
    const webhook = await company.webhooks.waitFor(eventId, WAIT_MS);
    expect(webhook.verified).toBe(true);
    expect(webhook.payload).toMatchObject({
      type: 'message.status',
      state: 'failed',
      error_code: 'EXPIRED',
      error_description: 'not sent by its acceptance time plus ttl_seconds',
    });
    expect(await sandbox.finishedState(company.apiKey, eventId, WAIT_MS)).toMatchObject({
      state: 'failed',
      error_code: 'EXPIRED',
      finished_at: webhook.payload!.timestamp,
    });
    // Nothing else comes of it: no second status, and the person never got the text.
    await sleep(3_000);
    expect(statuses(eventId)).toHaveLength(1);
    expect((await sandbox.inbox(person, bot)).map((m) => m.text)).not.toContain(text);
  });
});
