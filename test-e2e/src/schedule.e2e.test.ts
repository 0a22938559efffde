// send_at and POST /api/v1/cancel through the real stack (simulator, client-registry, senders, dispatcher,
// gateway): a scheduled message stays new across a restart of every service and is sent after its time,
// within a second of it; a cancel before its time ends it failed CANCELED in one webhook and the person never
// gets it; a cancel racing its time ends it in exactly one of sent and CANCELED; a cancel of another company's
// message is 404 and of an ended one 409.
import { setTimeout as sleep } from 'node:timers/promises';
import { MdsApiError, MdsNotFoundError, type EventState } from '@mds/client';
import { eventually } from '@mds/local-infra/testing';
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
  ({ stack, sandbox } = await startDeliveryStack());
  company = await sandbox.companyWithWebhooks('Scheduling');
  bot = await sandbox.bot(company.companyId, 'telegram', 'reminders');
  person = await sandbox.linkedPerson(company.companyId, bot, 'Ivan');
}, 180_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
});

const sdk = () => sandbox.sdk(company.apiKey);
const statuses = (eventId: string) =>
  company.webhooks.about(eventId).filter((w) => w.payload?.type === 'message.status');
const received = async () => (await sandbox.inbox(person, bot)).map((m) => m.text);

/** The message's state once the read model has it (a moment after its 202). */
const readable = (eventId: string): Promise<EventState> =>
  eventually(
    `${eventId} in the read API`,
    () =>
      sdk()
        .getEvent(eventId)
        .catch((error: unknown) => {
          if (error instanceof MdsNotFoundError) return undefined;
          throw error;
        }),
    WAIT_MS,
  );

const schedule = (text: string, sendAtMs: number) =>
  sandbox.send(company.apiKey, {
    phone_number: person.phone,
    service: 'telegram',
    text,
    send_at: new Date(sendAtMs).toISOString(),
  });

/** Every service stopped (SIGTERM, in reverse start order) and started again; the simulator keeps running. */
async function restartServices(): Promise<void> {
  const services = stack.processes().filter((p) => p.service !== 'messenger-simulator');
  for (const { replica } of [...services].reverse()) await replica.kill('SIGTERM');
  for (const { replica } of services) await replica.start();
}

const problemCode = (error: unknown) =>
  error instanceof MdsApiError ? `${error.status} ${error.code}` : error;

describe('send_at', () => {
  it('keeps a message new across a restart of every service, and sends it after its time, within 1 s', async () => {
    const text = `Your table is ready ${Date.now()}`;
    const sendAtMs = Date.now() + 45_000;
    const eventId = await schedule(text, sendAtMs);
    expect((await readable(eventId)).state).toBe('new');
    // Held by the sender by now (its journal), then every service goes away and comes back.
    await sleep(3_000);
    await restartServices();
    expect(Date.now()).toBeLessThan(sendAtMs - 2_000);
    // New until its time, and not with the person.
    await sleep(Math.max(0, sendAtMs - 1_500 - Date.now()));
    expect((await sdk().getEvent(eventId)).state).toBe('new');
    expect(await received()).not.toContain(text);

    const state = await sandbox.finishedState(company.apiKey, eventId, WAIT_MS);
    expect(state).toMatchObject({ state: 'sent' });
    const sentAtMs = Date.parse(state.finished_at!);
    expect(sentAtMs).toBeGreaterThanOrEqual(sendAtMs);
    expect(sentAtMs - sendAtMs).toBeLessThan(1_000);
    expect((await company.webhooks.waitFor(eventId, WAIT_MS)).payload).toMatchObject({ state: 'sent' });
    expect(await received()).toContain(text);
  });

  it('sends a message whose send_at is past at once', async () => {
    const text = `Already due ${Date.now()}`;
    const eventId = await schedule(text, Date.now() - 60_000);
    expect(await sandbox.finishedState(company.apiKey, eventId, WAIT_MS)).toMatchObject({ state: 'sent' });
    expect(await received()).toContain(text);
  });
});

describe('POST /api/v1/cancel', () => {
  it('ends a scheduled message failed CANCELED in one webhook; the person never gets it; then 409', async () => {
    const text = `Canceled reminder ${Date.now()}`;
    const sendAtMs = Date.now() + 10_000;
    const eventId = await schedule(text, sendAtMs);
    await readable(eventId);
    expect(await sdk().cancel(eventId)).toEqual({ status: 'cancel_requested', event_id: eventId });
    const webhook = await company.webhooks.waitFor(eventId, WAIT_MS);
    expect(webhook.verified).toBe(true);
    expect(webhook.payload).toMatchObject({
      type: 'message.status',
      state: 'failed',
      error_code: 'CANCELED',
    });
    expect(await sandbox.finishedState(company.apiKey, eventId, WAIT_MS)).toMatchObject({
      state: 'failed',
      error_code: 'CANCELED',
    });
    // Past its time: nothing else came of it.
    await sleep(Math.max(0, sendAtMs + 3_000 - Date.now()));
    expect(statuses(eventId)).toHaveLength(1);
    expect(await received()).not.toContain(text);
    // Ended: a second cancel is refused.
    expect(await sdk().cancel(eventId).catch(problemCode)).toBe('409 message_not_cancelable');
  });

  it('ends a cancel racing the send time in exactly one of sent and CANCELED', async () => {
    const offsetsMs = [-3_000, -100, 0, 100, 300];
    const base = Date.now() + 8_000;
    const messages = await Promise.all(
      offsetsMs.map(async (offsetMs, i) => {
        const text = `Race ${i} ${Date.now()}`;
        const sendAtMs = base + i * 2_000;
        return { text, sendAtMs, offsetMs, eventId: await schedule(text, sendAtMs) };
      }),
    );
    for (const m of messages) await readable(m.eventId);
    const answers = await Promise.all(
      messages.map(async (m) => {
        await sleep(Math.max(0, m.sendAtMs + m.offsetMs - Date.now()));
        return sdk()
          .cancel(m.eventId)
          .then((a) => a.status, problemCode);
      }),
    );
    for (const answer of answers)
      expect(['cancel_requested', '409 message_not_cancelable']).toContain(answer);
    const outcomes: string[] = [];
    for (const m of messages) {
      const state = await sandbox.finishedState(company.apiKey, m.eventId, WAIT_MS);
      const webhook = await company.webhooks.waitFor(m.eventId, WAIT_MS);
      if (state.state === 'sent') {
        expect(webhook.payload).toMatchObject({ state: 'sent' });
        expect(await received()).toContain(m.text);
      } else {
        expect(state).toMatchObject({ state: 'failed', error_code: 'CANCELED' });
        expect(webhook.payload).toMatchObject({ state: 'failed', error_code: 'CANCELED' });
      }
      outcomes.push(state.state === 'sent' ? 'sent' : 'CANCELED');
    }
    // Nothing more comes: one status each, and a canceled text never reaches the person.
    await sleep(3_000);
    const texts = await received();
    for (const [i, m] of messages.entries()) {
      expect(statuses(m.eventId)).toHaveLength(1);
      expect(texts.includes(m.text)).toBe(outcomes[i] === 'sent');
    }
    // The cancel well before its time won.
    expect(outcomes[0]).toBe('CANCELED');
  });

  it("answers 404 for another company's message and an unknown id, 409 for an ended one", async () => {
    const text = `Sent at once ${Date.now()}`;
    const eventId = await sandbox.send(company.apiKey, {
      phone_number: person.phone,
      service: 'telegram',
      text,
    });
    await sandbox.finishedState(company.apiKey, eventId, WAIT_MS);
    expect(await sdk().cancel(eventId).catch(problemCode)).toBe('409 message_not_cancelable');
    const other = await sandbox.company('Another company');
    const stranger = sandbox.sdk(other.apiKey);
    expect(await stranger.cancel(eventId).catch(problemCode)).toBe('404 not_found');
    expect(await sdk().cancel('0f6d2c3a-8a3e-4b4e-9a59-2d3c1c8f5b10').catch(problemCode)).toBe(
      '404 not_found',
    );
    expect(statuses(eventId)).toHaveLength(1);
  });
});
