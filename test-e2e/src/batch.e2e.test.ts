// POST /api/v1/send/batch through the whole delivery service as real processes (simulator, client-registry,
// both senders, webhook-dispatcher, gateway; the default topology): a batch of 500 messages with 3 invalid ones
// is answered item by item, every accepted message reaches its person in the simulator and ends with its one
// signed webhook, and the same batch sent again (its items carry idempotency keys) names the same messages and
// records nothing new.
import type { SendBatchItem, SendBatchResult } from '@mds/client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';
import { startDeliveryStack, type Sandbox } from './sandbox.js';

const SIZE = 500;
/** The invalid items and the error each must have. */
const INVALID = new Map([
  [7, { pointer: '#/messages/7/phone_number', code: 'invalid_phone_number' }],
  [250, { pointer: '#/messages/250/colour', code: 'unknown_field' }],
  [499, { pointer: '#/messages/499/text', code: 'required' }],
]);
const PEOPLE = 5;
const WAIT_MS = 120_000;

let stack: Stack;
let sandbox: Sandbox;

beforeAll(async () => {
  // A batch of 500 is one company's 500 sends: its limits, the bot's and the chats' are raised so that the
  // batch goes through in seconds (the limits themselves are the gateway's tests' and the senders').
  const fast = { BOT_RATE_PER_SECOND: '1000', CHAT_RATE_PER_SECOND: '0' };
  ({ stack, sandbox } = await startDeliveryStack({
    without: ['dashboard'],
    env: {
      gateway: { RATE_LIMIT_SEND_PER_KEY: '1000', RATE_LIMIT_SEND_PER_COMPANY: '1000' },
      'messenger-simulator': { TELEGRAM_BOT_RATE_PER_S: '1000', TELEGRAM_CHAT_RATE_PER_S: '1000' },
      'telegram-sender': fast,
    },
  }));
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
});

it('answers a batch of 500 with 3 invalid messages item by item, delivers the 497, and replays it by its keys', async () => {
  const company = await sandbox.companyWithWebhooks('Batch');
  const bot = await sandbox.bot(company.companyId, 'telegram', 'batch-telegram');
  const people = await Promise.all(
    Array.from({ length: PEOPLE }, (_, n) => sandbox.linkedPerson(company.companyId, bot, `Batch ${n}`)),
  );
  const items = Array.from({ length: SIZE }, (_, n): SendBatchItem => {
    const item = {
      phone_number: people[n % PEOPLE]!.phone_number,
      service: 'telegram' as const,
      text: `Batch message ${n}`,
      idempotency_key: `batch-${n}`,
    };
    if (n === 7) return { ...item, phone_number: '89123456789' };
    if (n === 250) return { ...item, colour: 'red' } as SendBatchItem;
    if (n === 499) return { ...item, text: undefined } as unknown as SendBatchItem;
    return item;
  });

  const { results } = await sandbox.sdk(company.apiKey).sendBatch(items);
  expect(results).toHaveLength(SIZE);
  results.forEach((result, n) => {
    const invalid = INVALID.get(n);
    if (invalid) expect(result).toEqual({ status: 'rejected', errors: [expect.objectContaining(invalid)] });
    else expect(result).toEqual({ status: 'accepted', event_id: expect.any(String) });
  });
  const accepted = results.flatMap((r: SendBatchResult, n) =>
    r.status === 'accepted' ? [[n, r.event_id] as const] : [],
  );
  expect(accepted).toHaveLength(SIZE - INVALID.size);
  expect(new Set(accepted.map(([, id]) => id)).size).toBe(accepted.length);

  // Every accepted message ends sent, with its signed webhook, and is in its person's chat.
  await eventually(
    'a webhook for every accepted message',
    () => accepted.every(([, id]) => company.webhooks.about(id).length > 0) || undefined,
    WAIT_MS,
  );
  for (const [, id] of accepted) {
    const [webhook] = company.webhooks.about(id);
    expect(webhook!.verified).toBe(true);
    expect(webhook!.payload).toMatchObject({ type: 'message.status', event_id: id, state: 'sent' });
  }
  // The read API tells the same as for any message.
  for (const [, id] of [accepted[0]!, accepted.at(-1)!])
    expect(await sandbox.finishedState(company.apiKey, id, WAIT_MS)).toMatchObject({
      event_id: id,
      kind: 'message',
      state: 'sent',
    });
  for (const [p, person] of people.entries()) {
    const texts = new Set((await sandbox.inbox(person, bot)).map((m) => m.text));
    for (const [n] of accepted) if (n % PEOPLE === p) expect(texts).toContain(`Batch message ${n}`);
  }

  // The same batch again: the same answers, nothing new sent.
  const again = await sandbox.sdk(company.apiKey).sendBatch(items);
  expect(again.results).toEqual(results);
  const { results: one } = await sandbox.sdk(company.apiKey).sendBatch([items[0]!]);
  expect(one).toEqual([results[0]]);
  // Anything sent again would have had its webhook by the time a later message of the same bot has its own.
  const { results: last } = await sandbox
    .sdk(company.apiKey)
    .sendBatch([{ ...items[0]!, text: 'Batch later', idempotency_key: 'batch-later' }]);
  const later = last[0] as { event_id: string };
  await company.webhooks.waitFor(later.event_id, WAIT_MS);
  for (const [, id] of accepted) expect(company.webhooks.about(id)).toHaveLength(1);
  const inboxes = await Promise.all(people.map((person) => sandbox.inbox(person, bot)));
  expect(inboxes.flat().filter((m) => /^Batch message \d+$/.test(m.text))).toHaveLength(accepted.length);
}, 300_000);
