import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { MdsUnauthorizedError, MdsValidationError, verifyWebhook, type SendRequest } from '@mds/client';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messageErrorCodes } from '@mds/contracts';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';
import {
  PRODUCTION_TOPOLOGY,
  startDeliveryStack,
  uniquePhone,
  type DemoCompany,
  type ReceivedWebhook,
  type Sandbox,
  type SimulatedBot,
  type SimulatedPerson,
  type WebhookReceiver,
} from './sandbox.js';

// The whole delivery service as real processes (simulator, client-registry, both senders,
// webhook-dispatcher, gateway), driven the way a company and its clients use it: people act in the
// simulated messengers, the company calls the public API and reads its signed webhooks. One stack for
// the file, in the production topology: two replicas of every service (the simulator stands in for the
// messengers: one) on a Kafka cluster of three brokers, every topic with 3 replicas and min ISR 2. Every
// case has its own company, bots and people.

// The gateway's send limits are low here so that a burst of one key meets them (RATE_LIMIT_BURST_SECONDS
// stays 2: a key's bucket holds 10 sends, a company's 20). Other cases send a few messages each.
const SEND_PER_KEY = 5;
const SEND_PER_COMPANY = 10;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const WAIT_MS = 60_000;

let stack: Stack;
let sandbox: Sandbox;

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack({
    ...PRODUCTION_TOPOLOGY,
    env: {
      // Every bot's update polls are logged too: keep enough of the log for a case's sends.
      'messenger-simulator': { REQUEST_LOG_SIZE: '20000' },
      gateway: {
        RATE_LIMIT_SEND_PER_KEY: String(SEND_PER_KEY),
        RATE_LIMIT_SEND_PER_COMPANY: String(SEND_PER_COMPANY),
      },
    },
  }));
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
});

/** A company with a webhook receiver and one bot of the messenger (its default). */
async function companyWithBot(name: string, messenger: 'telegram' | 'max' = 'telegram') {
  const company = await sandbox.companyWithWebhooks(name);
  const bot = await sandbox.bot(company.companyId, messenger, `${name}-${messenger}`);
  return { company, bot };
}

/** A notification as the company's server sees it: signed by the company's secret, Standard Webhooks headers. */
function expectSigned(webhook: ReceivedWebhook, company: DemoCompany): Record<string, unknown> {
  expect(webhook.verified).toBe(true);
  // The same check, spelled out with the library a receiver would use, and with the SDK's verifyWebhook.
  expect(new Webhook(company.secrets[0]!).verify(webhook.body, webhook.headers)).toEqual(webhook.payload);
  expect(verifyWebhook(webhook.body, webhook.headers, company.secrets)).toEqual(webhook.payload);
  expect(webhook.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
  expect(webhook.headers['webhook-timestamp']).toMatch(/^\d{10}$/);
  expect(webhook.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
  expect(webhook.headers['content-type']).toMatch(/^application\/json\b/);
  expect(webhook.headers['user-agent']).toBe('mds-webhook-dispatcher/1');
  return webhook.payload!;
}

/** The one `message.status` webhook of a message, checked to be signed and to have exactly the spec's fields. */
async function messageStatus(webhooks: WebhookReceiver, company: DemoCompany, eventId: string) {
  const payload = expectSigned(await webhooks.waitFor(eventId, WAIT_MS), company);
  expect(payload.type).toBe('message.status');
  const fields = payload.state === 'failed' ? ['error_code', 'error_description'] : [];
  expect(Object.keys(payload)).toEqual(['type', 'event_id', 'timestamp', 'state', ...fields]);
  expect(payload.timestamp).toMatch(ISO_MS);
  return payload;
}

async function expectSent(webhooks: WebhookReceiver, company: DemoCompany, eventId: string) {
  const payload = await messageStatus(webhooks, company, eventId);
  expect(payload).toEqual({
    type: 'message.status',
    event_id: eventId,
    timestamp: expect.stringMatching(ISO_MS),
    state: 'sent',
  });
  return payload;
}

/** A failed message: the same code and description on its webhook and in the read API. */
async function expectFailed(
  company: DemoCompany & { webhooks: WebhookReceiver },
  eventId: string,
  errorCode: string,
  errorDescription: string,
) {
  const payload = await messageStatus(company.webhooks, company, eventId);
  expect(payload).toEqual({
    type: 'message.status',
    event_id: eventId,
    timestamp: expect.stringMatching(ISO_MS),
    state: 'failed',
    error_code: errorCode,
    error_description: errorDescription,
  });
  const state = await sandbox.finishedState(company.apiKey, eventId, WAIT_MS);
  expect(state).toMatchObject({
    event_id: eventId,
    kind: 'message',
    state: 'failed',
    error_code: errorCode,
    error_description: errorDescription,
    finished_at: payload.timestamp,
  });
  expect(state.history.map((h) => h.type)).toEqual(['MessageAccepted', 'MessageDeliveryFailed']);
}

/** POST /api/v1/send through the SDK, checked against the spec's 202 body; answers the event_id. */
async function send(apiKey: string, message: SendRequest, options: { idempotencyKey?: string } = {}) {
  const answer = await sandbox.sdk(apiKey).send(message, options);
  expect(answer).toEqual({
    status: 'accepted',
    event_id: expect.stringMatching(UUID),
    data: { state: 'new' },
  });
  return answer.event_id;
}

/** The messages a person received with this text (waits until there is at least one). */
async function received(person: SimulatedPerson, bot: SimulatedBot, text: string) {
  return eventually(
    `"${text}" in the inbox of ${person.phone}`,
    async () => {
      const found = (await sandbox.inbox(person, bot)).filter((m) => m.text === text);
      return found.length > 0 ? found : undefined;
    },
    WAIT_MS,
  );
}

/** client/check through the public API, and the `client.check` webhook that answers it. */
async function check(company: DemoCompany & { webhooks: WebhookReceiver }, phone: string) {
  const answer = await sandbox.sdk(company.apiKey).checkClient({ phone_number: phone });
  expect(answer).toEqual({ status: 'accepted', event_id: expect.stringMatching(UUID) });
  const payload = expectSigned(await company.webhooks.waitFor(answer.event_id, WAIT_MS), company);
  expect(Object.keys(payload)).toEqual(['type', 'event_id', 'timestamp', 'phone_number', 'exists', 'bots']);
  expect(payload).toMatchObject({ type: 'client.check', event_id: answer.event_id });
  expect(payload.timestamp).toMatch(ISO_MS);
  return payload;
}

const buttons = [
  { text: 'Track the order', url: 'https://shop.example/orders/42' },
  { text: 'Contact us', url: 'https://shop.example/help?topic=delivery' },
];

describe.each(['telegram', 'max'] as const)('on %s', (messenger) => {
  it('a person who starts the bot and shares their contact is linked, receives a message with buttons, and the company gets a signed "sent"', async () => {
    const { company, bot } = await companyWithBot(`happy-${messenger}`, messenger);
    const person = await sandbox.person(uniquePhone(), 'Ivan');

    expect(await check(company, person.phone)).toEqual({
      type: 'client.check',
      event_id: expect.stringMatching(UUID),
      timestamp: expect.stringMatching(ISO_MS),
      phone_number: person.phone,
      exists: false,
      bots: [],
    });

    await sandbox.startAndShareContact(person, bot);
    await sandbox.waitForLink(company.companyId, person.phone, bot, true);
    const linked = await check(company, person.phone);
    expect(linked).toEqual({
      type: 'client.check',
      event_id: expect.stringMatching(UUID),
      timestamp: expect.stringMatching(ISO_MS),
      phone_number: person.phone,
      exists: true,
      bots: [{ service: messenger, bot_name: bot.name, reachable: true }],
    });
    // The read API tells the same about the latest check.
    const checkId = linked.event_id as string;
    expect(await sandbox.finishedState(company.apiKey, checkId, WAIT_MS)).toMatchObject({
      event_id: checkId,
      kind: 'client_check',
      state: 'checked',
      result: {
        phone_number: person.phone,
        exists: true,
        bots: [{ messenger, bot_name: bot.name, reachable: true }],
      },
    });

    const text = `Your order 42 is on its way (${messenger})`;
    const eventId = await send(company.apiKey, {
      phone_number: person.phone,
      text,
      service: messenger,
      buttons,
    });
    const status = await expectSent(company.webhooks, company, eventId);

    const [message, ...more] = await received(person, bot, text);
    expect(more).toEqual([]);
    // One button a row, each opening its URL.
    expect(message).toMatchObject({
      messenger,
      bot_id: bot.simulatorId,
      text,
      format: null,
      buttons: buttons.map((b) => [b]),
    });

    const state = await sandbox.finishedState(company.apiKey, eventId, WAIT_MS);
    expect(state).toMatchObject({
      event_id: eventId,
      kind: 'message',
      state: 'sent',
      messenger,
      bot_name: null,
      accepted_at: expect.stringMatching(ISO_MS),
      finished_at: status.timestamp,
    });
    expect(state.error_code).toBeUndefined();
    expect(state.history.map((h) => h.type)).toEqual(['MessageAccepted', 'MessageSent']);
  });
});

describe('failures', () => {
  it('a person who blocked the bot, one who deleted their account, and an unknown number each fail with the documented code', async () => {
    const { company, bot } = await companyWithBot('failures');
    const blocker = await sandbox.linkedPerson(company.companyId, bot, 'Blocker');
    const deactivated = await sandbox.linkedPerson(company.companyId, bot, 'Gone');

    // The block reaches the registry through the bot's updates; from then on routing refuses the chat.
    await sandbox.act(blocker, 'block', bot);
    await sandbox.waitForLink(company.companyId, blocker.phone, bot, false);
    const toBlocker = await send(company.apiKey, {
      phone_number: blocker.phone,
      text: 'blocked?',
      service: 'telegram',
    });
    await expectFailed(company, toBlocker, 'BOT_BLOCKED_BY_USER', messageErrorCodes.BOT_BLOCKED_BY_USER);

    // Telegram does not tell bots about a deleted account: the send itself is refused.
    await sandbox.act(deactivated, 'deactivate');
    const toDeactivated = await send(company.apiKey, {
      phone_number: deactivated.phone,
      text: 'anyone there?',
      service: 'telegram',
    });
    await expectFailed(company, toDeactivated, 'USER_DEACTIVATED', 'Forbidden: user is deactivated');
    // ...and the registry marks the link unreachable.
    await sandbox.waitForLink(company.companyId, deactivated.phone, bot, false);

    const toNobody = await send(company.apiKey, {
      phone_number: uniquePhone(),
      text: 'hello?',
      service: 'telegram',
    });
    await expectFailed(company, toNobody, 'CLIENT_NOT_FOUND', messageErrorCodes.CLIENT_NOT_FOUND);

    expect(await sandbox.inbox(blocker, bot)).toEqual([]);
    expect(await sandbox.inbox(deactivated, bot)).toEqual([]);
  });
});

describe('change_phone', () => {
  it('moves a client to a new number: sends to the new number reach the same person, sends to the old one fail', async () => {
    const { company, bot } = await companyWithBot('moving');
    const person = await sandbox.linkedPerson(company.companyId, bot, 'Mover');
    const oldPhone = person.phone;
    const newPhone = uniquePhone();

    const answer = await sandbox
      .sdk(company.apiKey)
      .changePhone({ old_phone: oldPhone, new_phone: newPhone });
    expect(answer).toEqual({ status: 'accepted', event_id: expect.stringMatching(UUID) });
    const changeId = answer.event_id;
    const changed = expectSigned(await company.webhooks.waitFor(changeId, WAIT_MS), company);
    expect(changed).toEqual({
      type: 'client.phone_changed',
      event_id: changeId,
      timestamp: expect.stringMatching(ISO_MS),
      state: 'changed',
      old_phone: oldPhone,
      new_phone: newPhone,
      links_moved: 1,
    });
    expect(await sandbox.finishedState(company.apiKey, changeId, WAIT_MS)).toMatchObject({
      kind: 'change_phone',
      state: 'changed',
      result: { old_phone: oldPhone, new_phone: newPhone, links_moved: 1 },
    });

    const toNew = await send(company.apiKey, {
      phone_number: newPhone,
      text: 'at your new number',
      service: 'telegram',
    });
    await expectSent(company.webhooks, company, toNew);
    expect(await received(person, bot, 'at your new number')).toHaveLength(1);

    const toOld = await send(company.apiKey, {
      phone_number: oldPhone,
      text: 'at your old number',
      service: 'telegram',
    });
    await expectFailed(company, toOld, 'CLIENT_NOT_FOUND', messageErrorCodes.CLIENT_NOT_FOUND);
    expect((await sandbox.inbox(person, bot)).map((m) => m.text)).toEqual(['at your new number']);
  });
});

describe('idempotency', () => {
  it('a retried send with the same Idempotency-Key is one message; the key with another body is refused', async () => {
    const { company, bot } = await companyWithBot('retrying');
    const person = await sandbox.linkedPerson(company.companyId, bot, 'Once');
    const key = `order-42-${randomUUID()}`;
    const body = { phone_number: person.phone, text: 'only once, please', service: 'telegram' as const };

    const first = await sandbox.call<{ event_id: string }>(company.apiKey, '/send', body, {
      'idempotency-key': key,
    });
    expect(first.status).toBe(202);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const eventId = first.body.event_id;
    expect(first.body).toEqual({ status: 'accepted', event_id: eventId, data: { state: 'new' } });

    const retry = await sandbox.call(company.apiKey, '/send', body, { 'idempotency-key': key });
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);

    const reused = await sandbox.call(
      company.apiKey,
      '/send',
      { ...body, text: 'something else' },
      { 'idempotency-key': key },
    );
    expect(reused.status).toBe(422);
    expect(reused.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
    expect(reused.body).toEqual({
      type: 'https://docs.mds.dev/problems/idempotency_key_reused',
      title: 'Idempotency-Key reused',
      status: 422,
      detail: 'This Idempotency-Key was used with a different request.',
      code: 'idempotency_key_reused',
      request_id: expect.any(String),
    });

    await expectSent(company.webhooks, company, eventId);
    // Once delivered, a retry still answers the first response and sends nothing.
    const late = await sandbox.call(company.apiKey, '/send', body, { 'idempotency-key': key });
    expect(late.status).toBe(202);
    expect(late.headers.get('idempotent-replayed')).toBe('true');
    expect(late.body).toEqual(first.body);

    // A later message to the same chat arrives after anything sent before it (one chat keeps its order).
    const after = await send(company.apiKey, {
      phone_number: person.phone,
      text: 'and then this',
      service: 'telegram',
    });
    await expectSent(company.webhooks, company, after);
    await received(person, bot, 'and then this');
    expect((await sandbox.inbox(person, bot)).map((m) => m.text)).toEqual([
      'only once, please',
      'and then this',
    ]);
    // One outcome, notified under one webhook-id.
    const notified = company.webhooks.about(eventId);
    expect(new Set(notified.map((w) => w.headers['webhook-id'])).size).toBe(1);
    expect(new Set(notified.map((w) => w.body)).size).toBe(1);
    const state = await sandbox.finishedState(company.apiKey, eventId, WAIT_MS);
    expect(state.history.map((h) => h.type)).toEqual(['MessageAccepted', 'MessageSent']);
  });
});

describe('rate limits', () => {
  it("a burst over the gateway's per-key limit is refused with 429 rate_limited and Retry-After, and every accepted send is delivered", async () => {
    const { company, bot } = await companyWithBot('bursting');
    const people = await Promise.all(
      [1, 2, 3].map((i) => sandbox.linkedPerson(company.companyId, bot, `Burst${i}`)),
    );

    const attempts = Array.from({ length: 24 }, (_, i) => ({
      person: people[i % people.length]!,
      text: `burst #${i}`,
    }));
    const burstStarted = Date.now();
    const answers = await Promise.all(
      attempts.map(({ person, text }) =>
        sandbox.call<Record<string, unknown>>(company.apiKey, '/send', {
          phone_number: person.phone,
          text,
          service: 'telegram',
        }),
      ),
    );
    const accepted = attempts.filter((_, i) => answers[i]!.status === 202);
    const refused = answers.filter((a) => a.status === 429);
    expect(accepted.length + refused.length).toBe(attempts.length);
    expect(accepted.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    console.log(
      `[flows] burst of ${attempts.length} sends: ${accepted.length} accepted, ${refused.length} refused 429`,
    );
    const keyCapacity = SEND_PER_KEY * 2;
    // The key's bucket is admitted whole, and no more than it plus what refilled while the burst lasted.
    const refilled = Math.ceil(((Date.now() - burstStarted) / 1000) * SEND_PER_KEY);
    expect(accepted.length).toBeGreaterThanOrEqual(keyCapacity);
    expect(accepted.length).toBeLessThanOrEqual(keyCapacity + refilled);
    for (const answer of refused) {
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
      expect(answer.body).toEqual({
        type: 'https://docs.mds.dev/problems/rate_limited',
        title: 'Too many requests',
        status: 429,
        detail: expect.stringMatching(
          new RegExp(
            `^The API key sends more than ${SEND_PER_KEY} requests per second \\(bursts up to ${keyCapacity}\\)\\. Retry after \\d+ s\\.$`,
          ),
        ),
        code: 'rate_limited',
        violated_policy: 'send-key',
        request_id: expect.any(String),
      });
      expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(answer.headers.get('ratelimit-policy')).toBe(
        `"send-key";q=${keyCapacity};w=2, "send-company";q=${SEND_PER_COMPANY * 2};w=2`,
      );
    }

    // A client that waits as told is let in again.
    const retryAfter = Math.max(...refused.map((a) => Number(a.headers.get('retry-after'))));
    await sleep(retryAfter * 1000);
    const late = await send(company.apiKey, {
      phone_number: people[0]!.phone,
      text: 'after waiting',
      service: 'telegram',
    });

    const ids = answers.filter((a) => a.status === 202).map((a) => (a.body as { event_id: string }).event_id);
    for (const id of [...ids, late]) await expectSent(company.webhooks, company, id);
    for (const person of people) {
      const expected = accepted.filter((a) => a.person === person).map((a) => a.text);
      if (person === people[0]) expected.push('after waiting');
      const texts = await eventually(
        `every accepted message in the inbox of ${person.phone}`,
        async () => {
          const inbox = (await sandbox.inbox(person, bot)).map((m) => m.text);
          return inbox.length >= expected.length ? inbox : undefined;
        },
        WAIT_MS,
      );
      expect([...texts].sort()).toEqual([...expected].sort());
    }
  });

  it("the messenger's own 429 is waited out and the message still arrives", async () => {
    const { company, bot: telegram } = await companyWithBot('flooded', 'telegram');
    const max = await sandbox.bot(company.companyId, 'max', 'flooded-max');
    const onTelegram = await sandbox.linkedPerson(company.companyId, telegram, 'Tg');
    const onMax = await sandbox.linkedPerson(company.companyId, max, 'Max');

    await sandbox.fault({ kind: '429', bot: telegram, method: 'sendMessage', retry_after: 1, count: 1 });
    await sandbox.fault({ kind: '429', bot: max, method: 'messages', count: 1 });
    const viaTelegram = await send(company.apiKey, {
      phone_number: onTelegram.phone,
      text: 'after the flood wait',
      service: 'telegram',
    });
    const viaMax = await send(company.apiKey, {
      phone_number: onMax.phone,
      text: 'after the backoff',
      service: 'max',
    });

    await expectSent(company.webhooks, company, viaTelegram);
    await expectSent(company.webhooks, company, viaMax);
    expect(await received(onTelegram, telegram, 'after the flood wait')).toHaveLength(1);
    expect(await received(onMax, max, 'after the backoff')).toHaveLength(1);

    // The simulator answered the first call 429 and the sender sent the same message again.
    const sends = (await sandbox.botRequests(telegram)).filter((r) => r.method === 'sendMessage');
    expect(sends.map((r) => [r.status, r.params.text])).toEqual([
      [429, 'after the flood wait'],
      [200, 'after the flood wait'],
    ]);
    const maxSends = (await sandbox.botRequests(max)).filter((r) => r.method === 'POST /messages');
    expect(maxSends.map((r) => r.status)).toEqual([429, 200]);
  });
});

describe('@mds/client against the running service', () => {
  it('answers typed errors, and carries a burst past the key limit through its retries: every send accepted once', async () => {
    const { company, bot } = await companyWithBot('sdk-burst');
    const person = await sandbox.linkedPerson(company.companyId, bot, 'Burst');
    const mds = sandbox.sdk(company.apiKey);

    const unauthorized = await sandbox
      .sdk('mds_000000000000_' + 'A'.repeat(43))
      .send({ phone_number: person.phone, service: 'telegram', text: 'x' })
      .catch((e: unknown) => e);
    expect(unauthorized).toBeInstanceOf(MdsUnauthorizedError);
    expect(unauthorized).toMatchObject({ status: 401, problem: { detail: 'Invalid or missing API key.' } });

    const invalid = (await mds
      .send({ phone_number: '89123456789', service: 'max', text: 'x' })
      .catch((e: unknown) => e)) as MdsValidationError;
    expect(invalid).toBeInstanceOf(MdsValidationError);
    expect(invalid.errors).toEqual([
      expect.objectContaining({ pointer: '#/phone_number', code: 'invalid_phone_number' }),
    ]);

    // The key's bucket holds SEND_PER_KEY * 2 sends: the rest meet 429 and are retried after Retry-After.
    const texts = Array.from({ length: SEND_PER_KEY * 2 + 4 }, (_, i) => `burst ${i}`);
    const started = Date.now();
    const ids = await Promise.all(
      texts.map((text) => mds.send({ phone_number: person.phone, service: 'telegram', text })),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(new Set(ids.map((a) => a.event_id)).size).toBe(texts.length);
    for (const { event_id } of ids) await expectSent(company.webhooks, company, event_id);
    const inbox = await eventually(
      'every burst message in the inbox',
      async () => {
        const got = (await sandbox.inbox(person, bot))
          .map((m) => m.text)
          .filter((t) => t.startsWith('burst'));
        return got.length >= texts.length ? got : undefined;
      },
      WAIT_MS,
    );
    expect([...inbox].sort()).toEqual([...texts].sort());
    const state = await mds.getEvent(ids[0]!.event_id);
    expect(state).toMatchObject({ event_id: ids[0]!.event_id, kind: 'message', messenger: 'telegram' });
  });
});
