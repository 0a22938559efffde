import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  registryV1,
  topics,
  type ClientEvent,
  type DeliveryEvent,
  type DeliveryRequested,
  type DeliveryUnroutable,
  type MessageAccepted,
  deliveryTopic,
} from '@mds/contracts';
import { randomBytes } from 'node:crypto';
import { openDatabase } from '@mds/db';
import { clientChannelOptions, grpc, isGrpcError, unary } from '@mds/grpc';
import { SCHEMA } from './adapters/db/migrations.js';
import { databasePersonKeys, resealPersonKeys } from './adapters/db/person-keys-store.js';
import { parseKeyring } from './application/secrets.js';
import { openRecords, registryPersonKeys, sealRecords } from '@mds/personal-data';
import {
  INTERNAL_TOKEN,
  admin,
  botUpdate,
  chatOf,
  collect,
  createCompany,
  eventually,
  messageAccepted,
  publishBotUpdates,
  publishMessage,
  registerBot,
  startRegistryStack,
  type RegistryStack,
} from '../test/support.js';

let stack: RegistryStack;
let keys: ReturnType<typeof registryPersonKeys>;
let client: registryV1.RegistryServiceClient;
let clientEvents: Awaited<ReturnType<typeof collect<ClientEvent>>>;
let deliveries: Awaited<ReturnType<typeof collect<DeliveryEvent>>>;

beforeAll(async () => {
  stack = await startRegistryStack();
  keys = registryPersonKeys({ address: stack.grpc, token: INTERNAL_TOKEN });
  client = new registryV1.RegistryServiceClient(
    stack.grpc,
    grpc.credentials.createInsecure(),
    clientChannelOptions('mds.registry.v1.RegistryService', { token: INTERNAL_TOKEN }),
  );
  [clientEvents, deliveries] = await Promise.all([
    collect(stack, topics.client),
    collect(stack, deliveryTopic('telegram')),
  ]);
});

afterAll(async () => {
  keys?.close();
  client?.close();
  await Promise.all([clientEvents, deliveries].map((c) => c?.stop()));
  await stack?.stop();
});

const PHONE = '79123450777';

describe('person keys', () => {
  it('are one per person and company, made on first use, and refused for what is no normalised number', async () => {
    const companyId = await createCompany(stack);
    const other = await createCompany(stack, 'Other');
    const a = await keys.obtain(companyId, PHONE);
    expect(await keys.obtain(companyId, PHONE)).toEqual(a);
    expect(a.key).toHaveLength(32);
    const elsewhere = await keys.obtain(other, PHONE);
    expect(elsewhere.subjectId).not.toBe(a.subjectId);
    expect(await keys.get(companyId, a.keyId)).toEqual(a);
    // Another company cannot read it by its id.
    expect(await keys.get(other, a.keyId)).toBe('erased');
    for (const phoneNumber of ['+79123450777', '7912 345', 'abc', '']) {
      const error = await unary(client, 'obtainPersonKey', { companyId, phoneNumber }).catch(
        (e: unknown) => e,
      );
      expect(isGrpcError(error, grpc.status.INVALID_ARGUMENT), phoneNumber).toBe(true);
    }
    const error = await unary(client, 'getPersonKey', { companyId: 'nope', keyId: a.keyId }).catch(
      (e: unknown) => e,
    );
    expect(isGrpcError(error, grpc.status.INVALID_ARGUMENT)).toBe(true);
  });
});

describe('forgetting a client', () => {
  it('destroys their key, removes their links, announces ClientForgotten, and fails their queued messages as CLIENT_FORGOTTEN', async () => {
    const companyId = await createCompany(stack);
    const { botId } = await registerBot(stack, companyId, 'telegram', 'shop');
    const chat = chatOf(botId, '7770');
    await publishBotUpdates(stack, [
      botUpdate(companyId, {
        $case: 'contactShared',
        value: { chat, providerUpdateId: '1', phoneNumber: PHONE },
      }),
    ]);
    const linked = await eventually('ClientLinked', () =>
      clientEvents.events.find((e) => e.metadata.companyId === companyId && e.event.$case === 'clientLinked'),
    );
    // The link event names the number only sealed.
    expect(linked.event.value).toMatchObject({ phoneNumber: '', sealed: expect.anything() });
    expect(Buffer.from(topics.client.codec.encode(linked)).toString('latin1')).not.toContain(PHONE);

    // A message sealed the way the gateway seals it: routed with its text still sealed, under the same key.
    const [sent] = await sealRecords(keys, [messageAccepted(companyId, PHONE, 1)]);
    const messageId = await publishMessage(stack, sent!);
    const order = await eventually('DeliveryRequested', () =>
      deliveries.events.find(
        (e) => e.event.$case === 'deliveryRequested' && e.event.value.messageId === messageId,
      ),
    );
    const work = order.event.value as DeliveryRequested;
    expect(work).toMatchObject({ text: '', buttons: [], chat: { chatId: '7770' } });
    expect(work.sealed!.keyId).toBe((sent!.event.value as MessageAccepted).sealed!.keyId);
    const [openedOrder] = await openRecords(keys, [order]);
    expect(openedOrder!.event.value).toMatchObject({
      text: 'hi',
      buttons: [{ text: 'Open', url: 'https://example.com' }],
    });

    // A second message accepted before the forget, routed after it.
    const [queued] = await sealRecords(keys, [messageAccepted(companyId, PHONE, 1)]);
    const subjectId = (queued!.event.value as MessageAccepted).sealed!.subjectId;

    const forgotten = await admin(stack, 'POST', `/companies/${companyId}/clients/${PHONE}/forget`);
    expect(forgotten).toEqual({
      status: 200,
      body: {
        subject_id: subjectId,
        subject_ids: [subjectId],
        numbers_forgotten: 1,
        keys_destroyed: 1,
        links_removed: 1,
      },
    });
    const announced = await eventually('ClientForgotten', () =>
      clientEvents.events.find(
        (e) => e.metadata.companyId === companyId && e.event.$case === 'clientForgotten',
      ),
    );
    expect(announced.event.value).toEqual({ subjectId });
    const client = await admin<{ exists: boolean; links: unknown[] }>(
      stack,
      'GET',
      `/companies/${companyId}/clients/${PHONE}`,
    );
    expect(client.body).toMatchObject({ exists: false, links: [] });
    expect(await keys.get(companyId, work.sealed!.keyId)).toBe('erased');

    // Everything sealed under the key is erased: the log's link event, the work order, and the queued message.
    const [erasedLink, erasedOrder] = await openRecords(keys, [linked, order]);
    expect(erasedLink!.event.value).toMatchObject({ phoneNumber: '' });
    expect(erasedOrder!.event.value).toMatchObject({ text: '', buttons: [] });
    const queuedId = await publishMessage(stack, queued!);
    const failed = await eventually('DeliveryUnroutable', () =>
      deliveries.events.find(
        (e) => e.event.$case === 'deliveryUnroutable' && e.event.value.messageId === queuedId,
      ),
    );
    expect((failed.event.value as DeliveryUnroutable).errorCode).toBe('CLIENT_FORGOTTEN');

    // Coming back later is a new person with a new key: the old data stays erased.
    const again = await keys.obtain(companyId, PHONE);
    expect(again.subjectId).toBe(subjectId);
    expect(again.keyId).not.toBe(work.sealed!.keyId);
    const [stillErased] = await openRecords(keys, [order]);
    expect(stillErased!.event.value).toMatchObject({ text: '' });
  });

  it('answers bad input with problems', async () => {
    const companyId = await createCompany(stack);
    expect((await admin(stack, 'POST', `/companies/${companyId}/clients/not-a-phone/forget`)).status).toBe(
      422,
    );
    expect((await admin(stack, 'POST', `/companies/${randomUUID()}/clients/${PHONE}/forget`)).status).toBe(
      404,
    );
    // Someone never seen is still announced (another service may hold rows of them): no key, no link.
    expect(
      (await admin(stack, 'POST', `/companies/${companyId}/clients/79990000000/forget`)).body,
    ).toMatchObject({
      keys_destroyed: 0,
      links_removed: 0,
    });
  });
});

describe('resealing person keys', () => {
  it('re-encrypts them and the subject secret under the current key, so the old one can be dropped', async () => {
    const companyId = await createCompany(stack);
    const before = await keys.obtain(companyId, PHONE);
    const db = await openDatabase({ url: stack.databaseUrl, schema: SCHEMA });
    try {
      const k2 = `k2:${randomBytes(32).toString('base64')}`;
      expect(
        await resealPersonKeys(db, parseKeyring(`${k2},${stack.encryptionKeys}`)),
      ).toBeGreaterThanOrEqual(2);
      // k1 dropped: every key, and subject ids, still come out the same.
      const only2 = databasePersonKeys(db, parseKeyring(k2));
      expect(await only2.get(companyId, before.keyId)).toEqual(before);
      expect(await only2.subjectId(companyId, PHONE)).toBe(before.subjectId);
      expect(await resealPersonKeys(db, parseKeyring(k2))).toBe(0);
    } finally {
      await db.destroy();
    }
  });
});
