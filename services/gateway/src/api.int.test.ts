import type { ClientRequestEvent, MessageEvent } from '@mds/contracts';
import { openRecords, registryPersonKeys } from '@mds/personal-data';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  INTERNAL_TOKEN,
  admin,
  clientRequestTopic,
  collect,
  companyWithKey,
  eventually,
  messageTopic,
  post,
  startStack,
  type TestStack,
} from '../test/support.js';

let stack: TestStack;
let acme: { companyId: string; apiKey: string; keyId: string };
let messages: Awaited<ReturnType<typeof collect<MessageEvent>>>;
let requests: Awaited<ReturnType<typeof collect<ClientRequestEvent>>>;
let personKeys: ReturnType<typeof registryPersonKeys>;

beforeAll(async () => {
  stack = await startStack();
  acme = await companyWithKey(stack, 'Acme');
  messages = await collect(stack, messageTopic);
  requests = await collect(stack, clientRequestTopic);
  personKeys = registryPersonKeys({ address: stack.registryGrpc, token: INTERNAL_TOKEN });
});
afterAll(async () => {
  personKeys?.close();
  await messages?.stop();
  await requests?.stop();
  await stack?.stop();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const sendBody = {
  phone_number: '79123456789',
  text: 'Your order 42 is ready',
  service: 'telegram',
  bot_name: 'shop_bot',
  buttons: [{ text: 'Track', url: 'https://example.com/t/42' }],
};

describe('POST /api/v1/send', () => {
  it('answers 202 with exactly the spec body, after the MessageAccepted event is in Kafka', async () => {
    const response = await post(stack, '/send', sendBody, { 'x-api-key': acme.apiKey });
    expect(response.status).toBe(202);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const body = (await response.json()) as { event_id: string };
    expect(Object.keys(body).sort()).toEqual(['data', 'event_id', 'status']);
    expect(body).toEqual({
      status: 'accepted',
      event_id: expect.stringMatching(UUID),
      data: { state: 'new' },
    });
    const event = await eventually('the event', () =>
      messages.events.find((e) => e.metadata.streamId === body.event_id),
    );
    expect(event.metadata).toMatchObject({
      type: 'MessageAccepted',
      companyId: acme.companyId,
      correlationId: body.event_id,
      producer: 'gateway',
    });
    // In the log the number, the text and the buttons are sealed under the person's key, and nothing else.
    const sealed = { subjectId: expect.stringMatching(/^[0-9a-f]{32}$/), keyId: expect.any(String) };
    expect(event.event).toEqual({
      $case: 'messageAccepted',
      value: {
        phoneNumber: '',
        text: '',
        messenger: 1,
        botName: 'shop_bot',
        buttons: [],
        apiKeyId: acme.keyId,
        idempotencyKey: '',
        sealed: expect.objectContaining(sealed),
      },
    });
    const [opened] = await openRecords(personKeys, [event]);
    expect(opened!.event).toEqual({
      $case: 'messageAccepted',
      value: {
        phoneNumber: '79123456789',
        text: sendBody.text,
        messenger: 1,
        botName: 'shop_bot',
        buttons: [{ text: 'Track', url: 'https://example.com/t/42' }],
        apiKeyId: acme.keyId,
        idempotencyKey: '',
        sealed: expect.objectContaining(sealed),
      },
    });
  });

  it("writes a fallback into the MessageAccepted: the message's own channel first, the fallback next", async () => {
    const response = await post(
      stack,
      '/send',
      { ...sendBody, fallback: [{ service: 'max', bot_name: 'shop_max_bot' }, { service: 'max' }] },
      { 'x-api-key': acme.apiKey },
    );
    expect(response.status).toBe(202);
    const { event_id } = (await response.json()) as { event_id: string };
    const event = await eventually('the event', () =>
      messages.events.find((e) => e.metadata.streamId === event_id),
    );
    expect(event.event).toMatchObject({
      $case: 'messageAccepted',
      value: {
        fallback: {
          channel: 0,
          current: { messenger: 1, botName: 'shop_bot' },
          next: [
            { messenger: 2, botName: 'shop_max_bot' },
            { messenger: 2, botName: '' },
          ],
          tried: [],
        },
      },
    });
  });

  it('stores a button URL normalized, as the messenger will get it', async () => {
    const response = await post(
      stack,
      '/send',
      {
        ...sendBody,
        buttons: [{ text: 'Go', url: 'HTTPS://Example.COM:443/a/../orders list?x=ü#top' }],
      },
      { 'x-api-key': acme.apiKey },
    );
    expect(response.status).toBe(202);
    const { event_id } = (await response.json()) as { event_id: string };
    const event = await eventually('the event', () =>
      messages.events.find((e) => e.metadata.streamId === event_id),
    );
    const [opened] = await openRecords(personKeys, [event]);
    expect(opened!.event.value).toMatchObject({
      buttons: [{ text: 'Go', url: 'https://example.com/orders%20list?x=%C3%BC#top' }],
    });
  });

  it('normalises an accepted phone format and defaults the optional fields', async () => {
    const response = await post(
      stack,
      '/send',
      { phone_number: '+7 (912) 345-67-89', text: 'hi', service: 'max' },
      { 'x-api-key': acme.apiKey },
    );
    expect(response.status).toBe(202);
    const { event_id } = (await response.json()) as { event_id: string };
    const event = await eventually('the event', () =>
      messages.events.find((e) => e.metadata.streamId === event_id),
    );
    const [opened] = await openRecords(personKeys, [event]);
    expect(opened!.event.value).toMatchObject({
      phoneNumber: '79123456789',
      messenger: 2,
      botName: '',
      buttons: [],
    });
  });
});

describe('POST /api/v1/change_phone and /api/v1/client/check', () => {
  it('answer 202 with status and event_id only, after their event is in Kafka', async () => {
    const changed = await post(
      stack,
      '/change_phone',
      { old_phone: '79123456789', new_phone: '79876543210' },
      { 'x-api-key': acme.apiKey },
    );
    expect(changed.status).toBe(202);
    const change = (await changed.json()) as { event_id: string };
    expect(change).toEqual({ status: 'accepted', event_id: expect.stringMatching(UUID) });
    const checked = await post(
      stack,
      '/client/check',
      { phone_number: '79123456789' },
      { 'x-api-key': acme.apiKey },
    );
    expect(checked.status).toBe(202);
    const check = (await checked.json()) as { event_id: string };
    expect(check).toEqual({ status: 'accepted', event_id: expect.stringMatching(UUID) });
    const changeEvent = await eventually('change', () =>
      requests.events.find((e) => e.metadata.streamId === change.event_id),
    );
    // Both numbers sealed under the key of the old number's person (the one whose links move).
    expect(changeEvent.event).toEqual({
      $case: 'phoneChangeRequested',
      value: {
        oldPhone: '',
        newPhone: '',
        apiKeyId: acme.keyId,
        idempotencyKey: '',
        sealed: expect.objectContaining({
          subjectId: (await personKeys.obtain(acme.companyId, '79123456789')).subjectId,
        }),
      },
    });
    const [openedChange] = await openRecords(personKeys, [changeEvent]);
    expect(openedChange!.event.value).toMatchObject({ oldPhone: '79123456789', newPhone: '79876543210' });
    const checkEvent = await eventually('check', () =>
      requests.events.find((e) => e.metadata.streamId === check.event_id),
    );
    expect(checkEvent.event).toEqual({
      $case: 'clientCheckRequested',
      value: { phoneNumber: '', apiKeyId: acme.keyId, idempotencyKey: '', sealed: expect.anything() },
    });
    const [opened] = await openRecords(personKeys, [checkEvent]);
    expect(opened!.event.value).toMatchObject({ phoneNumber: '79123456789' });
  });
});

describe('authentication', () => {
  const endpoints: [string, unknown][] = [
    ['/send', sendBody],
    ['/change_phone', { old_phone: '79123456789', new_phone: '79876543210' }],
    ['/client/check', { phone_number: '79123456789' }],
  ];

  it.each(endpoints)(
    '%s answers 401 {"detail": ...} without a key, with an unknown key, with garbage',
    async (path, body) => {
      for (const headers of <Record<string, string>[]>[
        {},
        { 'x-api-key': 'mds_000000000000_' + 'A'.repeat(43) },
        { 'x-api-key': 'not-a-key' },
        { 'x-api-key': `${acme.apiKey}x` },
      ]) {
        const response = await post(stack, path, body, headers);
        expect(response.status).toBe(401);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        expect(await response.json()).toEqual({ detail: 'Invalid or missing API key.' });
      }
    },
  );

  it('stops accepting a revoked key within the cache time', async () => {
    const company = await companyWithKey(stack, 'Revokers');
    expect(
      (await post(stack, '/client/check', { phone_number: '79123456789' }, { 'x-api-key': company.apiKey }))
        .status,
    ).toBe(202);
    await admin(stack, 'DELETE', `/companies/${company.companyId}/api-keys/${company.keyId}`);
    await eventually(
      'the revocation to apply',
      async () => {
        const response = await post(
          stack,
          '/client/check',
          { phone_number: '79123456789' },
          { 'x-api-key': company.apiKey },
        );
        return response.status === 401 ? true : undefined;
      },
      5_000,
    );
  });

  it('checks the key before anything else: a bad body with a bad key is 401, not 422', async () => {
    const response = await post(stack, '/send', '{not json', { 'x-api-key': 'nope' });
    expect(response.status).toBe(401);
  });
});

describe('isolation between companies', () => {
  it("a company's events carry its own id, and one company's idempotency keys are not another's", async () => {
    const other = await companyWithKey(stack, 'Other');
    const a = await post(
      stack,
      '/client/check',
      { phone_number: '79123456789' },
      { 'x-api-key': acme.apiKey, 'idempotency-key': 'shared-key' },
    );
    const b = await post(
      stack,
      '/client/check',
      { phone_number: '79876543210' },
      { 'x-api-key': other.apiKey, 'idempotency-key': 'shared-key' },
    );
    expect([a.status, b.status]).toEqual([202, 202]);
    const [idA, idB] = [
      ((await a.json()) as { event_id: string }).event_id,
      ((await b.json()) as { event_id: string }).event_id,
    ];
    expect(idA).not.toBe(idB);
    const eventB = await eventually('b', () => requests.events.find((e) => e.metadata.streamId === idB));
    expect(eventB.metadata.companyId).toBe(other.companyId);
  });
});
