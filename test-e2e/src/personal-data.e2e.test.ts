// Erasure of one person across the whole service, as real processes (simulator, client-registry, both
// senders, webhook-dispatcher, gateway, dashboard) on the run's broker and database: a person is linked,
// sent a message with a button, checked, and moved to a new number (change_phone), while the company's
// webhook endpoint answers every notification with its body and the person's number; the operator forgets
// them with `mds-admin clients forget` given only the new number (the registry follows the move back to the
// old one); then no table of any service's schema, no event of any topic (decoded through the contracts
// codecs, and its bytes), and no read API (the gateway's, the dashboard's message page) shows either number,
// the texts sent to them or what the endpoint answered. See docs/personal-data.md.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually } from '@mds/local-infra/testing';
import { eventsHolding as eventsIn, rowsHolding as rowsIn } from './erasure-scan.js';
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

const rowsHolding = (needles: readonly string[]) => rowsIn(stack, needles);
const eventsHolding = (needles: readonly string[]) => eventsIn(stack, needles);

it('after `mds-admin clients forget`, no table, no event and no read API shows the number or the texts', async () => {
  const company = await sandbox.companyWithWebhooks('Forgetful');
  const bot = await sandbox.bot(company.companyId, 'telegram', 'forgetful');
  const person = await sandbox.linkedPerson(company.companyId, bot, 'Ivan');
  const phone = person.phone;
  // The company's endpoint answers with what it knows: the notification back (a client.check's number, both
  // numbers of a client.phone_changed) and the person's number, to every webhook (message.status too).
  company.webhooks.respond = (webhook) => ({ status: 200, body: `noted ${webhook.body} for +${phone}` });
  const secretText = `Your parcel ${Date.now()} waits at Ivan's door`;
  const buttonText = `Track parcel ${process.pid}`;
  const buttonUrl = `https://track.example/${Date.now()}/ivan`;
  const sent = await sandbox.send(company.apiKey, {
    phone_number: phone,
    text: secretText,
    service: 'telegram',
    buttons: [{ text: buttonText, url: buttonUrl }],
  });
  expect((await sandbox.finishedState(company.apiKey, sent)).state).toBe('sent');
  await company.webhooks.waitFor(sent);
  const [received] = await sandbox.inbox(person, bot);
  expect(received?.text).toBe(secretText);
  const check = await sandbox.call<{ event_id: string }>(company.apiKey, '/client/check', {
    phone_number: phone,
  });
  expect(check.status).toBe(202);
  const checked = await sandbox.finishedState(company.apiKey, check.body.event_id);
  expect(checked.result).toMatchObject({ phone_number: phone, exists: true });
  await company.webhooks.waitFor(check.body.event_id);
  // The person moves to a new number: both numbers are in PhoneChangeRequested, PhoneChanged,
  // ClientPhoneChanged, the client.phone_changed webhook and the read models.
  const newPhone = uniquePhone();
  const change = await sandbox.call<{ event_id: string }>(company.apiKey, '/change_phone', {
    old_phone: phone,
    new_phone: newPhone,
  });
  expect(change.status).toBe(202);
  const changed = await sandbox.finishedState(company.apiKey, change.body.event_id);
  expect(changed).toMatchObject({
    state: 'changed',
    result: { old_phone: phone, new_phone: newPhone, links_moved: 1 },
  });
  expect((await company.webhooks.waitFor(change.body.event_id)).payload).toMatchObject({
    old_phone: phone,
    new_phone: newPhone,
  });

  const needles = [phone, newPhone, secretText, buttonText, buttonUrl];
  // The number and the texts are sealed in the log, yet the read models show them (opened with the key).
  expect(await eventsHolding(needles)).toEqual([]);
  const before = await eventually('the read models to hold the person', async () => {
    const rows = await rowsHolding(needles);
    return rows.some((r) => r.startsWith('dashboard.')) && rows.some((r) => r.startsWith('client_registry.'))
      ? rows
      : undefined;
  });
  expect(before.join('\n')).toContain(`"${phone}"`);
  expect(before.join('\n')).toContain(`"${newPhone}"`);
  // The dashboard's message page shows what the endpoint answered (the dispatcher's attempt log keeps it).
  const dashboard = await sandbox.dashboardSession(company.companyId, `forgetful-${process.pid}-owner`);
  const page = async () => JSON.stringify(await (await dashboard.call('GET', `/messages/${sent}`)).json());
  expect(await page()).toContain(`for +${phone}`);

  // The operator gives only the number the person has now: the registry follows the move back to the old
  // one, whose key seals everything before the move and the move itself, and forgets both.
  const forgotten = await sandbox.forgetClient(company.companyId, newPhone);
  expect(forgotten).toMatchObject({
    subject_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    subject_ids: [forgotten.subject_id, expect.stringMatching(/^[0-9a-f]{32}$/)],
    numbers_forgotten: 2,
    links_removed: 1,
  });
  expect(forgotten.keys_destroyed).toBeGreaterThanOrEqual(1);

  // Every service's consumer of ClientForgotten deletes what it held.
  await eventually('no table to hold the number or the texts', async () =>
    (await rowsHolding(needles)).length === 0 ? true : undefined,
  ).catch(() => undefined);
  expect(await rowsHolding(needles)).toEqual([]);
  expect(await eventsHolding(needles)).toEqual([]);
  const readMessage = await sandbox.call(company.apiKey, `/events/${sent}`);
  const readCheck = await sandbox.call<{ result: { phone_number: string } }>(
    company.apiKey,
    `/events/${check.body.event_id}`,
  );
  const readChange = await sandbox.call<{ result: { old_phone: string; new_phone: string } }>(
    company.apiKey,
    `/events/${change.body.event_id}`,
  );
  for (const answer of [readMessage, readCheck, readChange]) {
    expect(answer.status).toBe(200);
    for (const needle of needles) expect(JSON.stringify(answer.body)).not.toContain(needle);
  }
  const shown = await page();
  expect(shown).toContain('WebhookAttempted');
  for (const needle of needles) expect(shown).not.toContain(needle);
  expect(readCheck.body.result.phone_number).toBe('');
  expect(readChange.body.result).toMatchObject({ old_phone: '', new_phone: '', links_moved: 1 });
  expect(await sandbox.client(company.companyId, phone)).toMatchObject({ exists: false, links: [] });
  expect(await sandbox.client(company.companyId, newPhone)).toMatchObject({ exists: false, links: [] });

  // The number is a stranger now: a send to it is accepted and fails as for anyone unknown.
  const after = await sandbox.send(company.apiKey, {
    phone_number: phone,
    text: 'hello again',
    service: 'telegram',
  });
  expect(await sandbox.finishedState(company.apiKey, after)).toMatchObject({
    state: 'failed',
    error_code: 'CLIENT_NOT_FOUND',
  });
}, 240_000);
