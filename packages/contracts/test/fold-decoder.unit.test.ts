import { describe, expect, it } from 'vitest';
import {
  MessageEvent,
  type Messenger,
  topics,
  UndecodableEventError,
  type StreamCodec,
  type StreamRecord,
} from '../src/index.js';
import { storedFixtures, streams } from './fixtures.js';

const codecs = new Map(streams.map((s) => [s.codec.messageType, s.codec]));
const routing = (m: {
  eventId: string;
  occurredAt?: Date | undefined;
  companyId: string;
  streamId: string;
}) => ({
  eventId: m.eventId,
  occurredAt: m.occurredAt,
  companyId: m.companyId,
  streamId: m.streamId,
});

/** Every field of every case of a stream, as the generated code names them. */
function everyField(codec: StreamCodec<StreamRecord>, cases: string[]): Record<string, string[]> {
  return Object.fromEntries(
    cases.map((c) => [c, Object.keys((codec.fromJSON({ [c]: {} }).event!.value as object) ?? {})]),
  );
}

const pick = (value: unknown, names: readonly string[]) =>
  Object.fromEntries(names.map((n) => [n, (value as Record<string, unknown>)[n]]));

const messageFields = {
  messageAccepted: ['messenger', 'botName'],
  messageSent: ['sentAt', 'botId', 'attempts'],
  messageDeliveryFailed: ['failedAt', 'errorCode', 'errorDescription', 'botId', 'attempts'],
  messageCancelRequested: [],
  messageAttemptFailed: ['acceptedAt'],
} as const;

describe('foldDecoder', () => {
  const fixtures = storedFixtures();
  const casesOf = (messageType: string) =>
    fixtures.filter((f) => f.messageType === messageType).map((f) => f.eventCase);

  it.each(fixtures.map((f) => [`${f.messageType}/${f.eventCase}`, f] as const))(
    '%s gives the envelope routing fields and every field decode gives',
    (_name, fixture) => {
      const codec = codecs.get(fixture.messageType)!;
      const fields = everyField(codec, casesOf(fixture.messageType));
      const whole = codec.decode(fixture.bin);
      const view = codec.foldDecoder(fields as never)(fixture.bin);
      expect(routing(view.metadata)).toEqual(routing(whole.metadata));
      expect(view.event.$case).toBe(whole.event.$case);
      const names = fields[whole.event.$case]!;
      expect(pick(view.event.value, names)).toEqual(pick(whole.event.value, names));
    },
  );

  it('reads only the named fields of a case it can read from the bytes', () => {
    const decode = topics.message.codec.foldDecoder(messageFields);
    for (const f of fixtures.filter((x) => x.messageType === topics.message.codec.messageType)) {
      const whole = topics.message.codec.decode(f.bin);
      const names = messageFields[whole.event.$case];
      const view = decode(f.bin);
      expect(view.event.value).toEqual(pick(whole.event.value, names));
    }
  });

  it('reads numbers as the generated decoder does: negative enums, large unsigned, 64-bit seconds', () => {
    const decode = topics.message.codec.foldDecoder(messageFields);
    const { metadata } = topics.message.codec.decode(
      fixtures.find((f) => f.eventCase === 'messageSent')!.bin,
    );
    for (const event of [
      { $case: 'messageAccepted', value: { messenger: -3, botName: 'é😀' } },
      {
        $case: 'messageSent',
        value: { botId: '', sentAt: new Date(-86_400_000_123), attempts: 4_000_000_000 },
      },
      { $case: 'messageSent', value: { sentAt: new Date(8.64e15), attempts: 0 } },
    ] as const) {
      const bytes = MessageEvent.encode(MessageEvent.fromPartial({ metadata, event } as never)).finish();
      const whole = topics.message.codec.decode(bytes);
      const names = messageFields[whole.event.$case];
      expect(decode(bytes).event.value).toEqual(pick(whole.event.value, names));
    }
  });

  it('skips fields it does not know (added to the proto later) in the envelope and the event', () => {
    const decode = topics.message.codec.foldDecoder(messageFields);
    const record = topics.message.codec.decode(fixtures.find((f) => f.eventCase === 'messageSent')!.bin);
    const lengthDelimited = (field: number, bytes: number[]) => [(field << 3) | 2, bytes.length, ...bytes];
    const grow = (bytes: Uint8Array) => {
      // Strip the field's tag and length (each one byte here), append a string field 15 and a varint 14.
      const inner = [...bytes].slice(2);
      return [...inner, ...lengthDelimited(15, [0x61, 0x62]), (14 << 3) | 0, 7];
    };
    const envelope = grow(MessageEvent.encode({ metadata: record.metadata }).finish());
    const event = grow(MessageEvent.encode({ event: record.event }).finish());
    const bytes = Uint8Array.from([...lengthDelimited(1, envelope), ...lengthDelimited(11, event)]);
    const view = decode(bytes);
    expect(view.metadata).toEqual(routing(record.metadata)); // read from the bytes, not decoded whole
    expect(view.event.value).toEqual(pick(record.event.value, [...messageFields.messageSent]));
  });

  it('gives every short string right when thousands share its table (the same slots, over and over)', () => {
    const decode = topics.message.codec.foldDecoder(messageFields);
    const { metadata } = topics.message.codec.decode(
      fixtures.find((f) => f.eventCase === 'messageSent')!.bin,
    );
    const names = Array.from({ length: 3000 }, (_, i) => (i % 3 === 0 ? `бот_${i}` : `bot_${i}`));
    for (const round of [1, 2])
      for (const [i, botName] of names.entries()) {
        const event = {
          $case: 'messageAccepted' as const,
          value: { botName, messenger: (i % 3) as Messenger },
        };
        const bytes = MessageEvent.encode(MessageEvent.fromPartial({ metadata, event })).finish();
        expect(decode(bytes).event.value, `round ${round}`).toEqual({ botName, messenger: i % 3 });
      }
  });

  it('decodes any other layout whole, as decode does', () => {
    const decode = topics.message.codec.foldDecoder(messageFields);
    const record = topics.message.codec.decode(fixtures.find((f) => f.eventCase === 'messageAccepted')!.bin);
    const envelope = [...MessageEvent.encode({ metadata: record.metadata }).finish()];
    const event = [...MessageEvent.encode({ event: record.event }).finish()];
    for (const bytes of [
      Uint8Array.from([...event, ...envelope]), // envelope last
      Uint8Array.from([...envelope, ...event, (9 << 3) | 2, 1, 1]), // a record field added later
      Uint8Array.from([...envelope, ...event, ...event]), // an event written twice
    ]) {
      const view = decode(bytes);
      expect(view.metadata).toMatchObject(routing(record.metadata));
      expect(view.event).toEqual(topics.message.codec.decode(bytes).event);
    }
  });

  it('refuses what decode refuses', () => {
    const decode = topics.message.codec.foldDecoder(messageFields);
    expect(() => decode(new Uint8Array([0xff, 0xff, 0xff]))).toThrow(UndecodableEventError);
    expect(() => decode(Uint8Array.from([(1 << 3) | 2, 3, 0x0a, 5, 0x61]))).toThrow(UndecodableEventError);
    const { metadata } = topics.message.codec.decode(
      fixtures.find((f) => f.eventCase === 'messageSent')!.bin,
    );
    const envelopeOnly = MessageEvent.encode({ metadata }).finish();
    expect(() => decode(envelopeOnly)).toThrow(/carries no event this build knows/);
    expect(() => decode(Uint8Array.from([...envelopeOnly, (99 << 3) | 2, 0]))).toThrow(
      /carries no event this build knows/,
    );
  });

  it('refuses a case the stream does not have', () => {
    expect(() => topics.message.codec.foldDecoder({ ...messageFields, nothing: [] } as never)).toThrow(
      /no case nothing/,
    );
  });
});
