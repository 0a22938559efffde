import {
  newEvent,
  topics,
  type ClientEvent,
  type ClientRequestEvent,
  type MessageEvent,
  type StreamRecord,
} from '@mds/contracts';
import { describe, expect, it } from 'vitest';
import {
  createPersonKeyCache,
  isErased,
  memoryPersonKeys as memoryKeys,
  newPersonKeyMaterial,
  openPersonalData,
  openRecords,
  sealPersonalData,
  sealOf,
  sealRecords,
  SealedDataError,
  subjectIdOf,
  type PersonKey,
} from './index.js';

const COMPANY = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';

function accepted(phone: string, text: string, requestMetadata?: Record<string, string>): MessageEvent {
  return newEvent<MessageEvent>({
    eventId: crypto.randomUUID(),
    occurredAt: new Date(),
    companyId: COMPANY,
    streamId: crypto.randomUUID(),
    producer: 'gateway',
    event: {
      $case: 'messageAccepted',
      value: {
        phoneNumber: phone,
        text,
        messenger: 1,
        botName: '',
        buttons: [{ text: 'Track it', url: 'https://example.com/t/42' }],
        apiKeyId: 'k',
        idempotencyKey: '',
        requestMetadata: requestMetadata && { entries: requestMetadata },
      },
    },
  });
}

const OLD_PHONE = '79123456789';
const NEW_PHONE = '79876543210';

/** change_phone's three events, with both numbers in plain text (as their producers make them). */
function phoneChanges(): { record: ClientRequestEvent | ClientEvent; codec: 'clientRequest' | 'client' }[] {
  const meta = {
    eventId: crypto.randomUUID(),
    occurredAt: new Date(),
    companyId: COMPANY,
    streamId: crypto.randomUUID(),
  };
  return [
    {
      codec: 'clientRequest',
      record: newEvent<ClientRequestEvent>({
        ...meta,
        producer: 'gateway',
        event: {
          $case: 'phoneChangeRequested',
          value: { oldPhone: OLD_PHONE, newPhone: NEW_PHONE, apiKeyId: 'k', idempotencyKey: 'i' },
        },
      }),
    },
    {
      codec: 'clientRequest',
      record: newEvent<ClientRequestEvent>({
        ...meta,
        producer: 'client-registry',
        event: { $case: 'phoneChanged', value: { oldPhone: OLD_PHONE, newPhone: NEW_PHONE, linksMoved: 2 } },
      }),
    },
    {
      codec: 'client',
      record: newEvent<ClientEvent>({
        ...meta,
        producer: 'client-registry',
        event: {
          $case: 'clientPhoneChanged',
          value: { oldPhone: OLD_PHONE, newPhone: NEW_PHONE, requestId: meta.streamId },
        },
      }),
    },
  ];
}

const phonesOf = (record: StreamRecord) => {
  const value = record.event!.value as { oldPhone: string; newPhone: string };
  return { oldPhone: value.oldPhone, newPhone: value.newPhone };
};

describe('subject ids', () => {
  it('are the same for one number at one company, different across companies and secrets, and hide the number', () => {
    const a = subjectIdOf('s', COMPANY, '79123456789');
    expect(subjectIdOf('s', COMPANY, '79123456789')).toBe(a);
    expect(subjectIdOf('s', OTHER, '79123456789')).not.toBe(a);
    expect(subjectIdOf('t', COMPANY, '79123456789')).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{32}$/);
    expect(a).not.toContain('79123456789');
  });
});

describe('sealing', () => {
  const key: PersonKey = { subjectId: 'a'.repeat(32), keyId: 'k1', key: newPersonKeyMaterial() };
  const data = {
    phoneNumber: '79123456789',
    text: 'Привет',
    buttons: [{ text: 'b', url: 'https://x.test/' }],
    newPhoneNumber: '',
  };

  it('opens what it sealed, and the ciphertext shows none of it', () => {
    const sealed = sealPersonalData(key, COMPANY, data);
    expect(Buffer.from(sealed.ciphertext).toString('latin1')).not.toContain('79123456789');
    expect(openPersonalData(key, COMPANY, sealed)).toEqual(data);
  });

  it('refuses a ciphertext moved to another company, another key, or changed by one bit', () => {
    const sealed = sealPersonalData(key, COMPANY, data);
    expect(() => openPersonalData(key, OTHER, sealed)).toThrow(SealedDataError);
    const otherKey = { ...key, key: newPersonKeyMaterial() };
    expect(() => openPersonalData(otherKey, COMPANY, sealed)).toThrow(SealedDataError);
    const flipped = Buffer.from(sealed.ciphertext);
    flipped[0]! ^= 1;
    expect(() => openPersonalData(key, COMPANY, { ...sealed, ciphertext: flipped })).toThrow(SealedDataError);
    expect(() => openPersonalData(key, COMPANY, { ...sealed, ciphertext: flipped.subarray(0, 4) })).toThrow(
      /truncated/,
    );
  });
});

describe('records', () => {
  it('seal into an event whose encoded bytes hold no number nor text, and open back to the original', async () => {
    const { port } = memoryKeys();
    const original = accepted('79123456789', 'Your order 42 has shipped');
    const [sealed] = await sealRecords(port, [original]);
    const bytes = Buffer.from(topics.message.codec.encode(sealed!)).toString('latin1');
    for (const secret of ['79123456789', 'order 42', 'Track it', 'example.com'])
      expect(bytes).not.toContain(secret);
    const decoded = topics.message.codec.decode(topics.message.codec.encode(sealed!));
    expect(decoded.event.$case === 'messageAccepted' && decoded.event.value.phoneNumber).toBe('');
    const [opened] = await openRecords(port, [decoded]);
    const value = opened!.event.value;
    expect(value).toMatchObject({ phoneNumber: '79123456789', text: 'Your order 42 has shipped' });
    expect(isErased(value)).toBe(false);
  });

  it('open as erased, without throwing, once the person is forgotten', async () => {
    const { port } = memoryKeys();
    const [sealed] = await sealRecords(port, [accepted('79123456789', 'hello')]);
    port.forget(COMPANY, '79123456789');
    const [opened] = await openRecords(port, [sealed!]);
    const value = opened!.event!.value as { phoneNumber: string; text: string; buttons: unknown[] };
    expect(isErased(value)).toBe(true);
    expect(value).toMatchObject({ phoneNumber: '', text: '', buttons: [] });
  });

  it("seal a request's metadata with its number (saying only that it holds some), open it, and erase it", async () => {
    const { port } = memoryKeys();
    const [sealed, without] = await sealRecords(port, [
      accepted('79123456789', 'hello', { order_id: 'order-4242', note: 'Ivan Petrov' }),
      accepted('79123456789', 'hello'),
    ]);
    const bytes = Buffer.from(topics.message.codec.encode(sealed!)).toString('latin1');
    for (const secret of ['order_id', 'order-4242', 'Ivan Petrov']) expect(bytes).not.toContain(secret);
    expect(sealOf(sealed!)?.hasRequestMetadata).toBe(true);
    expect(sealOf(without!)?.hasRequestMetadata).toBe(false);
    const [opened] = await openRecords(port, [
      topics.message.codec.decode(topics.message.codec.encode(sealed!)),
    ]);
    expect(opened!.event.value).toMatchObject({
      requestMetadata: { entries: { order_id: 'order-4242', note: 'Ivan Petrov' } },
    });
    port.forget(COMPANY, '79123456789');
    const [erased] = await openRecords(port, [sealed!]);
    expect(isErased(erased!.event!.value)).toBe(true);
    expect(erased!.event!.value).toMatchObject({ requestMetadata: undefined });
  });

  it('written before sealing existed pass through as they are', async () => {
    const { port, calls } = memoryKeys();
    const plain = accepted('79123456789', 'old');
    const [opened] = await openRecords(port, [plain]);
    expect(opened).toBe(plain);
    expect(calls.get).toBe(0);
  });
});

describe("change_phone's events", () => {
  it("seal both numbers under the old number's person, hold neither in their bytes, and open back", async () => {
    const { port, calls } = memoryKeys();
    const oldPersonKey = await port.obtain(COMPANY, OLD_PHONE);
    for (const { record, codec } of phoneChanges()) {
      const [sealed] = await sealRecords(port, [record]);
      const bytes = Buffer.from(topics[codec].codec.encode(sealed as never));
      expect(bytes.includes(OLD_PHONE)).toBe(false);
      expect(bytes.includes(NEW_PHONE)).toBe(false);
      const decoded = topics[codec].codec.decode(bytes) as StreamRecord;
      expect(phonesOf(decoded)).toEqual({ oldPhone: '', newPhone: '' });
      expect(sealOf(decoded)).toMatchObject({ subjectId: oldPersonKey.subjectId, keyId: oldPersonKey.keyId });
      const [opened] = await openRecords(port, [decoded]);
      expect(phonesOf(opened!)).toEqual({ oldPhone: OLD_PHONE, newPhone: NEW_PHONE });
      expect(isErased(opened!.event!.value)).toBe(false);
    }
    // Only the old number's person has a key: the new number was never obtained.
    expect(calls.obtain).toBe(4);
    const newPersonKey = await port.obtain(COMPANY, NEW_PHONE);
    expect(newPersonKey.keyId).not.toBe(oldPersonKey.keyId);
  });

  it('open as erased once the old number is forgotten, and pass through when written in plain text', async () => {
    const { port } = memoryKeys();
    const plain = phoneChanges().map((c) => c.record);
    const sealed = await sealRecords(port, plain);
    port.forget(COMPANY, OLD_PHONE);
    for (const opened of await openRecords(port, sealed)) {
      expect(isErased(opened.event!.value)).toBe(true);
      expect(phonesOf(opened)).toEqual({ oldPhone: '', newPhone: '' });
    }
    const passed = await openRecords(port, plain);
    passed.forEach((record, i) => expect(record).toBe(plain[i]));
  });
});

describe('the key cache', () => {
  it('asks the port once per person while the key is fresh, shares concurrent misses, and asks again after the TTL', async () => {
    const { port, calls } = memoryKeys();
    let t = 0;
    const cache = createPersonKeyCache(port, { ttlMs: 1_000, now: () => t });
    await Promise.all([cache.obtain(COMPANY, '7900'), cache.obtain(COMPANY, '7900')]);
    await cache.obtain(COMPANY, '7900');
    expect(calls.obtain).toBe(1);
    const key = await cache.obtain(COMPANY, '7900');
    await cache.get(COMPANY, key.keyId);
    expect(calls.get).toBe(0);
    t = 1_001;
    await cache.obtain(COMPANY, '7900');
    expect(calls.obtain).toBe(2);
  });

  it('stays within its bound, dropping the least recently used', async () => {
    const { port, calls } = memoryKeys();
    const cache = createPersonKeyCache(port, { maxEntries: 4 });
    for (let i = 0; i < 10; i += 1) await cache.obtain(COMPANY, `79${i}`);
    expect(cache.size).toBe(4);
    await cache.obtain(COMPANY, '799');
    expect(calls.obtain).toBe(10);
    await cache.obtain(COMPANY, '790');
    expect(calls.obtain).toBe(11);
  });

  it('forgets a subject at once: its keys read as erased, other people are untouched', async () => {
    const { port } = memoryKeys();
    const cache = createPersonKeyCache(port);
    const ivan = await cache.obtain(COMPANY, '7901');
    const olga = await cache.obtain(COMPANY, '7902');
    cache.forgetSubject(COMPANY, ivan.subjectId);
    expect(await cache.get(COMPANY, ivan.keyId)).toBe('erased');
    expect(await cache.get(COMPANY, olga.keyId)).toBe(olga);
  });

  it('lets a failed lookup fail, and tries again on the next call', async () => {
    let fail = true;
    const { port } = memoryKeys();
    const cache = createPersonKeyCache({
      obtain: (c, p) => (fail ? Promise.reject(new Error('registry down')) : port.obtain(c, p)),
      get: port.get,
    });
    await expect(cache.obtain(COMPANY, '7903')).rejects.toThrow('registry down');
    fail = false;
    await expect(cache.obtain(COMPANY, '7903')).resolves.toMatchObject({ keyId: expect.any(String) });
  });
});
