import { randomUUID } from 'node:crypto';
import {
  Messenger,
  messageErrorCodes,
  newEvent,
  topics,
  type Complete,
  type MessageEvent,
} from '@mds/contracts';
import type { EventPublisher } from '@mds/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  collect,
  companyWithKey,
  eventually,
  messageTopic,
  post,
  stackPublisher,
  startStack,
  type TestStack,
} from '../test/support.js';
import type { EventStateBody } from './api/event-state.js';

let stack: TestStack;
let acme: { companyId: string; apiKey: string };
let globex: { companyId: string; apiKey: string };
let publisher: EventPublisher;

beforeAll(async () => {
  stack = await startStack();
  acme = await companyWithKey(stack, 'Acme');
  globex = await companyWithKey(stack, 'Globex');
  publisher = await stackPublisher(stack);
});
afterAll(async () => {
  await publisher?.disconnect();
  await stack?.stop();
});

const get = (eventId: string, apiKey?: string) =>
  fetch(`${stack.gatewayUrl}/api/v1/events/${eventId}`, { headers: apiKey ? { 'x-api-key': apiKey } : {} });

/** Polls the read API until the state satisfies `ready`. */
async function stateOf(
  eventId: string,
  apiKey: string,
  ready: (body: EventStateBody) => boolean = () => true,
): Promise<EventStateBody> {
  return eventually(`the state of ${eventId}`, async () => {
    const response = await get(eventId, apiKey);
    if (response.status !== 200) return undefined;
    const body = (await response.json()) as EventStateBody;
    return ready(body) ? body : undefined;
  });
}

async function accept(path: string, body: unknown, apiKey = acme.apiKey): Promise<string> {
  const response = await post(stack, path, body, { 'x-api-key': apiKey });
  expect(response.status).toBe(202);
  return ((await response.json()) as { event_id: string }).event_id;
}

function messageEvent(
  messageId: string,
  event: NonNullable<MessageEvent['event']>,
  at = new Date(),
): Complete<MessageEvent> {
  return newEvent<MessageEvent>({
    eventId: randomUUID(),
    occurredAt: at,
    companyId: acme.companyId,
    streamId: messageId,
    producer: 'telegram-sender',
    event,
  });
}

describe('GET /api/v1/events/{event_id}', () => {
  it('shows a message that could not be routed as failed, with its error code and its history', async () => {
    const id = await accept('/send', { phone_number: '79123456789', text: 'hi', service: 'telegram' });
    // What the telegram sender publishes when client-registry finds no route (the company has no bots).
    await publisher.publish([
      {
        topic: topics.message,
        key: id,
        record: messageEvent(id, {
          $case: 'messageDeliveryFailed',
          value: {
            errorCode: 'CLIENT_NOT_FOUND',
            errorDescription: 'No client with this phone number',
            failedAt: new Date(),
            attempts: 0,
            botId: '',
          },
        }),
      },
    ]);
    const body = await stateOf(id, acme.apiKey, (b) => b.state === 'failed');
    expect(body).toMatchObject({ event_id: id, kind: 'message', messenger: 'telegram', bot_name: null });
    expect(Object.keys(messageErrorCodes)).toContain(body.error_code);
    expect(body.error_description).toBeTruthy();
    expect(body.history.map((h) => h.type)).toEqual(['MessageAccepted', 'MessageDeliveryFailed']);
    expect(Date.parse(body.finished_at!)).toBeGreaterThanOrEqual(Date.parse(body.accepted_at!));
  });

  it('shows a sent message with its times; a copy of an event changes nothing; a later failure does not undo it', async () => {
    const id = randomUUID();
    const acceptedAt = new Date(Date.now() - 2_000);
    const accepted = messageEvent(
      id,
      {
        $case: 'messageAccepted',
        value: {
          phoneNumber: '79123456789',
          text: 'hi',
          messenger: Messenger.MESSENGER_MAX,
          botName: 'shop',
          buttons: [],
          apiKeyId: 'k',
          idempotencyKey: '',
        },
      },
      acceptedAt,
    );
    const sentAt = new Date(acceptedAt.getTime() + 700);
    const sent = messageEvent(
      id,
      { $case: 'messageSent', value: { botId: 'bot-1', providerMessageId: '9', sentAt, attempts: 1 } },
      sentAt,
    );
    // Accepted and sent land together; a failure that comes later (a stale decision) must not undo `sent`.
    await publisher.publish([
      { topic: topics.message, key: id, record: accepted },
      { topic: topics.message, key: id, record: sent },
    ]);
    const lateFailure = messageEvent(id, {
      $case: 'messageDeliveryFailed',
      value: {
        errorCode: 'CLIENT_NOT_FOUND',
        errorDescription: 'late',
        failedAt: new Date(),
        attempts: 0,
        botId: '',
      },
    });
    await publisher.publish([
      { topic: topics.message, key: id, record: sent },
      { topic: topics.message, key: id, record: lateFailure },
    ]);
    const body = await stateOf(id, acme.apiKey, (b) => b.history.length === 3);
    expect(body).toMatchObject({
      state: 'sent',
      messenger: 'max',
      bot_name: 'shop',
      accepted_at: acceptedAt.toISOString(),
      finished_at: sentAt.toISOString(),
    });
    expect(body.error_code).toBeUndefined();
    expect(body.history.map((h) => h.type)).toEqual([
      'MessageAccepted',
      'MessageSent',
      'MessageDeliveryFailed',
    ]);
    expect(body.history[1]).toEqual({
      type: 'MessageSent',
      at: sentAt.toISOString(),
      event_id: sent.metadata.eventId,
    });
  });

  it('shows the result of a change_phone and of a client check', async () => {
    const change = await accept('/change_phone', { old_phone: '79123456789', new_phone: '79876543210' });
    expect(await stateOf(change, acme.apiKey, (b) => b.state !== 'new')).toMatchObject({
      kind: 'change_phone',
      state: 'rejected',
      error_code: 'OLD_PHONE_NOT_FOUND',
      result: { old_phone: '79123456789', new_phone: '79876543210', links_moved: null },
    });
    const check = await accept('/client/check', { phone_number: '79123456789' });
    const checked = await stateOf(check, acme.apiKey, (b) => b.state !== 'new');
    expect(checked).toMatchObject({
      kind: 'client_check',
      state: 'checked',
      result: { phone_number: '79123456789', exists: false, bots: [] },
    });
    expect(checked.history.map((h) => h.type)).toEqual(['ClientCheckRequested', 'ClientChecked']);
  });

  it("answers another company's id exactly as an unknown one: 404 not_found", async () => {
    const id = await accept('/client/check', { phone_number: '79123456789' });
    await stateOf(id, acme.apiKey);
    const foreign = await get(id, globex.apiKey);
    const unknown = await get(randomUUID(), globex.apiKey);
    const malformed = await get('not-an-id', globex.apiKey);
    for (const response of [foreign, unknown, malformed]) {
      expect(response.status).toBe(404);
      expect(response.headers.get('content-type')).toContain('application/problem+json');
    }
    const bodies = (await Promise.all([foreign, unknown].map((r) => r.json()))) as {
      code: string;
      detail: string;
    }[];
    expect(bodies[0]!.code).toBe('not_found');
    expect({ ...bodies[0], request_id: undefined }).toEqual({ ...bodies[1], request_id: undefined });
  });

  it('needs an API key', async () => {
    const response = await get(randomUUID());
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ detail: 'Invalid or missing API key.' });
  });
});

describe('POST /api/v1/cancel and the read model', () => {
  const cancel = (eventId: unknown, apiKey = acme.apiKey) =>
    post(stack, '/cancel', { event_id: eventId }, { 'x-api-key': apiKey });

  it('records a cancel of a new message on its stream (its history), which stays new until its outcome', async () => {
    const id = await accept('/send', {
      phone_number: '79123456789',
      text: 'See you at 19:00',
      service: 'max',
      send_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    await stateOf(id, acme.apiKey);
    // Any case of the id names the message; the cancel is written under the id as its events spell it.
    const response = await cancel(id.toUpperCase());
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ status: 'cancel_requested', event_id: id });
    const state = await stateOf(id, acme.apiKey, (b) => b.history.length === 2);
    expect(state).toMatchObject({ state: 'new', messenger: 'max' });
    expect(state.history.map((h) => h.type)).toEqual(['MessageAccepted', 'MessageCancelRequested']);
    // Not another company's to cancel; nor a client check, which is no message.
    expect((await cancel(id, globex.apiKey)).status).toBe(404);
    const check = await accept('/client/check', { phone_number: '79123456789' });
    await stateOf(check, acme.apiKey);
    expect((await cancel(check)).status).toBe(404);
    expect((await cancel(42)).status).toBe(422);
  });

  it('a message with a fallback: shows the channel it is at and those tried, and a cancel names that channel', async () => {
    const messages = await collect(stack, messageTopic);
    try {
      const id = await accept('/send', {
        phone_number: '79123456789',
        text: 'Your order has shipped',
        service: 'telegram',
        bot_name: 'shop_bot',
        fallback: [{ service: 'max' }],
        send_at: new Date(Date.now() + 3_600_000).toISOString(),
      });
      expect(await stateOf(id, acme.apiKey)).toMatchObject({
        state: 'new',
        messenger: 'telegram',
        service: 'telegram',
        bot_name: 'shop_bot',
        attempts: [],
      });
      // What telegram's sender decides when the person never linked to shop_bot: the message goes on to MAX.
      const telegram = { messenger: Messenger.MESSENGER_TELEGRAM, botName: 'shop_bot' };
      const max = { messenger: Messenger.MESSENGER_MAX, botName: '' };
      const attempt = {
        ...telegram,
        botId: 'bot-1',
        errorCode: 'CLIENT_NOT_LINKED_TO_BOT',
        errorDescription: 'not linked',
        failedAt: new Date(),
      };
      await publisher.publish([
        {
          topic: topics.message,
          key: id,
          record: messageEvent(id, {
            $case: 'messageAttemptFailed',
            value: { route: { channel: 0, current: telegram, next: [max], tried: [] }, attempt },
          }),
        },
      ]);
      const on = await stateOf(id, acme.apiKey, (b) => b.history.length === 2);
      expect(on).toMatchObject({
        state: 'new',
        messenger: 'max',
        service: 'max',
        bot_name: null,
        attempts: [{ service: 'telegram', bot_name: 'shop_bot', error_code: 'CLIENT_NOT_LINKED_TO_BOT' }],
      });
      expect(on.history.map((h) => h.type)).toEqual(['MessageAccepted', 'MessageAttemptFailed']);
      // The cancel goes to the channel it is at: MAX's sender decides it.
      expect((await cancel(id)).status).toBe(202);
      const canceled = await eventually('the cancel', () =>
        messages.events.find((e) => e.metadata.streamId === id && e.event.$case === 'messageCancelRequested'),
      );
      expect(canceled.event.value).toMatchObject({
        messenger: Messenger.MESSENGER_MAX,
        fallback: { channel: 1, current: max, next: [], tried: [attempt] },
      });
      // Once MAX's sender sent it: the channel that decided it, as resolved there.
      const maxResolved = { messenger: Messenger.MESSENGER_MAX, botName: 'shop_max_bot' };
      await publisher.publish([
        {
          topic: topics.message,
          key: id,
          record: messageEvent(id, {
            $case: 'messageSent',
            value: {
              botId: 'bot-2',
              providerMessageId: '7',
              sentAt: new Date(),
              attempts: 1,
              fallback: { channel: 1, current: maxResolved, next: [], tried: [attempt] },
            },
          }),
        },
      ]);
      expect(await stateOf(id, acme.apiKey, (b) => b.state === 'sent')).toMatchObject({
        service: 'max',
        bot_name: 'shop_max_bot',
        attempts: [{ service: 'telegram', bot_name: 'shop_bot', error_code: 'CLIENT_NOT_LINKED_TO_BOT' }],
      });
    } finally {
      await messages.stop();
    }
  });

  it('a message without a fallback has no service nor attempts', async () => {
    const id = await accept('/send', { phone_number: '79123456789', text: 'hi', service: 'max' });
    const body = await stateOf(id, acme.apiKey);
    expect(body).not.toHaveProperty('service');
    expect(body).not.toHaveProperty('attempts');
  });
});
