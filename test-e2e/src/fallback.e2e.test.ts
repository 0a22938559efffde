// `fallback` (issue 35) through the real stack (simulator, client-registry, both senders, dispatcher,
// gateway): a message to a person who never started the company's Telegram bot, with MAX as its fallback,
// reaches them on MAX, and its one webhook names MAX and the Telegram attempt; so does one to a person who
// blocked the Telegram bot where the registry does not know it yet (Telegram's sender finds it at its send).
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually } from '@mds/local-infra/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Stack } from './harness.js';
import {
  startDeliveryStack,
  uniquePhone,
  type DemoCompany,
  type Sandbox,
  type SimulatedBot,
  type WebhookReceiver,
} from './sandbox.js';

const WAIT_MS = 60_000;

/** One stack for the file: a company with a Telegram and a MAX bot (each the default of its messenger). */
let world: {
  stack: Stack;
  sandbox: Sandbox;
  company: DemoCompany & { webhooks: WebhookReceiver };
  telegram: SimulatedBot;
  max: SimulatedBot;
};

beforeAll(async () => {
  const { stack, sandbox } = await startDeliveryStack();
  const company = await sandbox.companyWithWebhooks('Fallback');
  const telegram = await sandbox.bot(company.companyId, 'telegram', 'shop');
  world = { stack, sandbox, company, telegram, max: await sandbox.bot(company.companyId, 'max', 'shop_max') };
}, 180_000);

afterAll(async () => {
  await world?.sandbox.close();
  await world?.stack.stop();
});

const statuses = (eventId: string) =>
  world.company.webhooks.about(eventId).filter((w) => w.payload?.type === 'message.status');

/** POST /api/v1/send with MAX's default bot as the fallback of Telegram's: answers the event_id. */
async function sendWithFallback(phone: string, text: string): Promise<string> {
  const { sandbox, company } = world;
  const answer = await sandbox.call<{ event_id: string }>(company.apiKey, '/send', {
    phone_number: phone,
    text,
    service: 'telegram',
    fallback: [{ service: 'max' }],
  });
  expect(answer.status).toBe(202);
  return answer.body.event_id;
}

/** Its one message.status, the read API's state and each inbox, once it ended and nothing more came. */
async function ended(eventId: string, error_code: string) {
  const { sandbox, company } = world;
  const webhook = await company.webhooks.waitFor(eventId, WAIT_MS);
  expect(webhook.verified).toBe(true);
  const attempts = [{ service: 'telegram', bot_name: 'shop', error_code }];
  expect(webhook.payload).toEqual({
    type: 'message.status',
    event_id: eventId,
    timestamp: expect.any(String),
    state: 'sent',
    service: 'max',
    bot_name: 'shop_max',
    attempts,
  });
  // Today's fields first, then the channel's.
  expect(Object.keys(webhook.payload!)).toEqual([
    'type',
    'event_id',
    'timestamp',
    'state',
    'service',
    'bot_name',
    'attempts',
  ]);
  const state = await sandbox.finishedState(company.apiKey, eventId, WAIT_MS);
  expect(state).toMatchObject({ state: 'sent', service: 'max', bot_name: 'shop_max', attempts });
  expect(state.history.map((h) => h.type)).toEqual([
    'MessageAccepted',
    'MessageAttemptFailed',
    'MessageSent',
  ]);
  // Nothing else comes of it: one status.
  await sleep(3_000);
  expect(statuses(eventId)).toHaveLength(1);
}

it('a person who never started the Telegram bot gets the message on MAX; one webhook names MAX and the Telegram attempt', async () => {
  const { sandbox, company, telegram, max } = world;
  const person = await sandbox.person(uniquePhone(), 'Maxim');
  await sandbox.startAndShareContact(person, max);
  await sandbox.waitForLink(company.companyId, person.phone, max, true);
  const text = `Your parcel is here ${Date.now()}`;

  const eventId = await sendWithFallback(person.phone, text);
  await ended(eventId, 'CLIENT_NOT_LINKED_TO_BOT');
  expect((await sandbox.inbox(person, max)).map((m) => m.text)).toContain(text);
  expect((await sandbox.inbox(person, telegram)).map((m) => m.text)).not.toContain(text);
}, 240_000);

it('a person who blocked the Telegram bot, unknown to the registry yet, gets it on MAX once Telegram refuses the send', async () => {
  const { sandbox, company, telegram, max } = world;
  const person = await sandbox.person(uniquePhone(), 'Blocker');
  await sandbox.startAndShareContact(person, telegram);
  await sandbox.startAndShareContact(person, max);
  await sandbox.waitForLink(company.companyId, person.phone, telegram, true);
  await sandbox.waitForLink(company.companyId, person.phone, max, true);
  // Telegram's updates are held back (getUpdates fails, once the poll in flight has ended), so the block
  // reaches no one before the send.
  const held = await sandbox.fault({ kind: '5xx', bot: telegram, method: 'getUpdates', count: 1_000_000 });
  try {
    await eventually('a poll of Telegram failed', async () =>
      (await sandbox.botRequests(telegram)).some((r) => r.method === 'getUpdates' && r.status >= 500)
        ? true
        : undefined,
    );
    await sandbox.act(person, 'block', telegram);
    const text = `Your table is ready ${Date.now()}`;
    const eventId = await sendWithFallback(person.phone, text);
    await ended(eventId, 'BOT_BLOCKED_BY_USER');
    // Refused by Telegram at the send (not by routing), then sent by MAX.
    const refused = (await sandbox.botRequests(telegram)).filter((r) => r.method === 'sendMessage');
    expect(refused.map((r) => r.status)).toEqual([403]);
    expect((await sandbox.inbox(person, max)).map((m) => m.text)).toContain(text);
    expect((await sandbox.inbox(person, telegram)).map((m) => m.text)).not.toContain(text);
    // The refusal told the registry, as an update would have.
    await sandbox.waitForLink(company.companyId, person.phone, telegram, false);
  } finally {
    await sandbox.clearFault(held.id);
  }
}, 240_000);

it('a cancel of a scheduled message reaches the channel it is at: MAX, after Telegram could not reach the person', async () => {
  const { sandbox, company, max } = world;
  const person = await sandbox.person(uniquePhone(), 'Later');
  await sandbox.startAndShareContact(person, max);
  await sandbox.waitForLink(company.companyId, person.phone, max, true);
  const text = `See you tomorrow ${Date.now()}`;
  const answer = await sandbox.call<{ event_id: string }>(company.apiKey, '/send', {
    phone_number: person.phone,
    text,
    service: 'telegram',
    fallback: [{ service: 'max' }],
    send_at: new Date(Date.now() + 60_000).toISOString(),
  });
  expect(answer.status).toBe(202);
  const eventId = answer.body.event_id;
  // Telegram's channel ends at once (no route there); MAX's holds the message until its time.
  await eventually(
    'the Telegram attempt in the read API',
    async () => {
      const state = await sandbox.call<{ service?: string }>(company.apiKey, `/events/${eventId}`);
      return state.status === 200 && state.body.service === 'max' ? true : undefined;
    },
    WAIT_MS,
  );
  expect((await sandbox.sdk(company.apiKey).cancel(eventId)).status).toBe('cancel_requested');
  const webhook = await company.webhooks.waitFor(eventId, WAIT_MS);
  const attempts = [{ service: 'telegram', bot_name: 'shop', error_code: 'CLIENT_NOT_LINKED_TO_BOT' }];
  expect(webhook.payload).toMatchObject({
    state: 'failed',
    error_code: 'CANCELED',
    service: 'max',
    bot_name: 'shop_max',
    attempts,
  });
  expect(await sandbox.finishedState(company.apiKey, eventId, WAIT_MS)).toMatchObject({
    state: 'failed',
    error_code: 'CANCELED',
    service: 'max',
    attempts,
  });
  await sleep(3_000);
  expect(statuses(eventId)).toHaveLength(1);
  expect(await sandbox.inbox(person, max)).toEqual([]);
}, 240_000);
