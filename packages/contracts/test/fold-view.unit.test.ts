import { describe, expect, it } from 'vitest';
import { MessageEvent, topics, UndecodableEventError } from '../src/index.js';
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

// A length-delimited field of number `field` holding `bytes` (field numbers below 16: one tag byte).
const lengthDelimited = (field: number, bytes: number[]) => [(field << 3) | 2, bytes.length, ...bytes];

describe('decodeForFold', () => {
  const fixtures = storedFixtures();

  it.each(fixtures.map((f) => [`${f.messageType}/${f.eventCase}`, f] as const))(
    '%s gives the event and the envelope routing fields decode gives',
    (_name, fixture) => {
      const codec = codecs.get(fixture.messageType)!;
      const whole = codec.decode(fixture.bin);
      const view = codec.decodeForFold(fixture.bin);
      expect(view.event).toEqual(whole.event);
      expect(view.metadata).toEqual(routing(whole.metadata));
    },
  );

  it('skips envelope and record fields it does not know (added to the proto later)', () => {
    const record = topics.message.codec.decode(
      storedFixtures().find((f) => f.eventCase === 'messageSent')!.bin,
    );
    const envelope = [...MessageEvent.encode({ metadata: record.metadata }).finish()];
    // Field 1 of the record is its envelope: append a string field 15 and a varint field 14 inside it.
    const inner = envelope.slice(2);
    const grown = [...inner, ...lengthDelimited(15, [0x61, 0x62]), (14 << 3) | 0, 7];
    const event = [...MessageEvent.encode({ event: record.event }).finish()];
    const bytes = Uint8Array.from([
      (1 << 3) | 2,
      grown.length,
      ...grown,
      ...event,
      ...lengthDelimited(9, [1]),
    ]);
    const view = topics.message.codec.decodeForFold(bytes);
    expect(view.metadata).toEqual(routing(record.metadata));
    expect(view.event).toEqual(record.event);
  });

  it('decodes a record whose envelope does not come first as decode does', () => {
    const record = topics.message.codec.decode(
      storedFixtures().find((f) => f.eventCase === 'messageAccepted')!.bin,
    );
    const envelope = [...MessageEvent.encode({ metadata: record.metadata }).finish()];
    const event = [...MessageEvent.encode({ event: record.event }).finish()];
    const view = topics.message.codec.decodeForFold(Uint8Array.from([...event, ...envelope]));
    expect(view.metadata).toMatchObject(routing(record.metadata));
    expect(view.event).toEqual(record.event);
  });

  it('refuses what decode refuses', () => {
    const codec = topics.message.codec;
    expect(() => codec.decodeForFold(new Uint8Array([0xff, 0xff, 0xff]))).toThrow(UndecodableEventError);
    expect(() => codec.decodeForFold(Uint8Array.from(lengthDelimited(1, [0x0a, 5, 0x61])))).toThrow(
      UndecodableEventError,
    );
    const noEnvelope = MessageEvent.encode({
      event: { $case: 'messageSent', value: { botId: 'b', providerMessageId: '1', attempts: 1 } },
    }).finish();
    expect(() => codec.decodeForFold(noEnvelope)).toThrow(/without metadata/);
    const { metadata } = codec.decode(storedFixtures().find((f) => f.eventCase === 'messageSent')!.bin);
    // Field 99 is no case of MessageEvent's oneof: an event type of a newer producer.
    const envelopeOnly = MessageEvent.encode({ metadata }).finish();
    const futureEvent = Uint8Array.from([...envelopeOnly, (99 << 3) | 2, 0]);
    expect(() => codec.decodeForFold(futureEvent)).toThrow(/carries no event this build knows/);
  });
});
