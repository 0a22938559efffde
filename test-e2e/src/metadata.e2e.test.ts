// `metadata` (issue 35) through real processes on the run's broker and database: a send, a change_phone and
// a client/check carrying metadata get it back in their signed webhooks and in the read API; a send without
// it gets no `metadata` key at all; the values are in no event (sealed), and once the person is forgotten
// no table holds them and the read API shows `{}`.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually } from '@mds/local-infra/testing';
import { eventsHolding, rowsHolding } from './erasure-scan.js';
import type { Stack } from './harness.js';
import { startDeliveryStack, uniquePhone, type Sandbox } from './sandbox.js';

let stack: Stack;
let sandbox: Sandbox;

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack());
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
});

it('echoes metadata in every webhook of its request and in the read API, and only there', async () => {
  const company = await sandbox.companyWithWebhooks('Tagged');
  const bot = await sandbox.bot(company.companyId, 'telegram', 'tagged');
  const person = await sandbox.linkedPerson(company.companyId, bot, 'Olga');
  const unique = `${process.pid}-${Date.now()}`;
  const metadata = { order_id: `ord-${unique}`, 'campaign.name': `autumn sale ${unique}`, empty: '' };
  const ticket = `T-${unique}`;
  const reason = `moved-${unique}`;

  const sent = await sandbox.send(company.apiKey, {
    phone_number: person.phone,
    text: 'Your order shipped',
    service: 'telegram',
    metadata,
  });
  const plain = await sandbox.send(company.apiKey, {
    phone_number: person.phone,
    text: 'No metadata here',
    service: 'telegram',
  });
  const status = await company.webhooks.waitFor(sent);
  expect(status.verified).toBe(true);
  expect(status.payload).toMatchObject({ type: 'message.status', state: 'sent', metadata });
  expect(await sandbox.finishedState(company.apiKey, sent)).toMatchObject({ state: 'sent', metadata });
  // Without metadata: the body and the state are exactly as before.
  const plainStatus = await company.webhooks.waitFor(plain);
  expect(Object.keys(plainStatus.payload!)).toEqual(['type', 'event_id', 'timestamp', 'state']);
  expect(await sandbox.finishedState(company.apiKey, plain)).not.toHaveProperty('metadata');

  const check = await sandbox.call<{ event_id: string }>(company.apiKey, '/client/check', {
    phone_number: person.phone,
    metadata: { ticket },
  });
  expect(check.status).toBe(202);
  const checked = await company.webhooks.waitFor(check.body.event_id);
  expect(checked.verified).toBe(true);
  expect(checked.payload).toMatchObject({ type: 'client.check', exists: true, metadata: { ticket } });

  const newPhone = uniquePhone();
  const change = await sandbox.call<{ event_id: string }>(company.apiKey, '/change_phone', {
    old_phone: person.phone,
    new_phone: newPhone,
    metadata: { reason },
  });
  expect(change.status).toBe(202);
  const changed = await company.webhooks.waitFor(change.body.event_id);
  expect(changed.payload).toMatchObject({
    type: 'client.phone_changed',
    state: 'changed',
    metadata: { reason },
  });
  expect(await sandbox.finishedState(company.apiKey, change.body.event_id)).toMatchObject({
    metadata: { reason },
  });

  // A bad key is refused with its own code, before anything is accepted.
  const refused = await sandbox.call<{ errors: { pointer: string; code: string }[] }>(
    company.apiKey,
    '/send',
    { phone_number: person.phone, text: 'x', service: 'telegram', metadata: { 'bad key': 'v' } },
  );
  expect(refused.status).toBe(422);
  expect(refused.body.errors).toEqual([
    expect.objectContaining({ pointer: '#/metadata/bad key', code: 'metadata_invalid_key' }),
  ]);

  // Personal data: sealed in the log; forgetting the person erases it from every table.
  const needles = [metadata.order_id, metadata['campaign.name'], ticket, reason];
  expect(await eventsHolding(stack, needles)).toEqual([]);
  // Opened where it is shown or sent: the dispatcher's bodies and the metadata it keeps, the dashboard's timeline.
  const held = await eventually('the read models to hold the metadata', async () => {
    const rows = (await rowsHolding(stack, needles)).join('\n');
    return rows.includes('dashboard.timeline') ? rows : undefined;
  });
  expect(held).toContain('webhook_dispatcher.deliveries');
  expect(held).toContain('webhook_dispatcher.request_metadata');
  expect(held).not.toContain('gateway.');
  await sandbox.forgetClient(company.companyId, newPhone);
  await eventually('no table to hold the metadata', async () =>
    (await rowsHolding(stack, needles)).length === 0 ? true : undefined,
  ).catch(() => undefined);
  expect(await rowsHolding(stack, needles)).toEqual([]);
  for (const id of [sent, check.body.event_id, change.body.event_id]) {
    const forgotten = await sandbox.call<{ metadata?: unknown }>(company.apiKey, `/events/${id}`);
    expect(forgotten.body.metadata).toEqual({});
  }
}, 240_000);
