// A lighter decode for folds that read millions of records (mds-replay): the envelope's routing fields
// only, the event through the generated decoder. Field numbers are learned from the generated encoders
// at start-up (never written here), so fields added to the proto later are skipped like any unknown one.
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { Timestamp } from './gen/google/protobuf/timestamp.js';
import { EventMetadata } from './gen/mds/events/v1/metadata.js';
import type { Complete, ProtoMessage, StreamRecord } from './streams.js';

/** The envelope fields a fold reads: which event, of which stream, whose, and when. */
export type FoldEnvelope = Pick<EventMetadata, 'eventId' | 'occurredAt' | 'companyId' | 'streamId'>;

/** A record as a fold sees it: its envelope's routing fields and its whole event. */
export type FoldView<R extends StreamRecord> = Omit<Complete<R>, 'metadata'> & { metadata: FoldEnvelope };

const firstFieldOf = (bytes: Uint8Array): number => new BinaryReader(bytes).tag()[0];

/** The field number of one EventMetadata field, from what the generated encoder writes for it alone. */
function metadataField(field: keyof FoldEnvelope): number {
  const probe = { ...EventMetadata.fromJSON({}), [field]: field === 'occurredAt' ? new Date(1000) : 'x' };
  return firstFieldOf(EventMetadata.encode(probe).finish());
}

const firstTimestampField = (t: Partial<Timestamp>) =>
  firstFieldOf(Timestamp.encode({ ...Timestamp.fromJSON({}), ...t }).finish());
const TIMESTAMP_FIELDS = {
  seconds: firstTimestampField({ seconds: '1' }),
  nanos: firstTimestampField({ nanos: 1 }),
};

/** Epoch milliseconds of a google.protobuf.Timestamp of `length` bytes, as the generated fromTimestamp computes them. */
function readTimestampMillis(reader: BinaryReader, length: number): number {
  const end = reader.pos + length;
  let seconds = 0;
  let nanos = 0;
  while (reader.pos < end) {
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo === TIMESTAMP_FIELDS.seconds && wireType === WireType.Varint)
      seconds = Number(reader.int64());
    else if (fieldNo === TIMESTAMP_FIELDS.nanos && wireType === WireType.Varint) nanos = reader.int32();
    else skipField(reader, wireType, fieldNo);
  }
  return (seconds || 0) * 1_000 + (nanos || 0) / 1_000_000;
}

const ENVELOPE_FIELDS = {
  eventId: metadataField('eventId'),
  occurredAt: metadataField('occurredAt'),
  companyId: metadataField('companyId'),
  streamId: metadataField('streamId'),
};

function skipField(reader: BinaryReader, wireType: WireType, fieldNo: number): void {
  if (wireType === WireType.LengthDelimited) {
    const length = reader.uint32();
    reader.pos += length;
    if (reader.pos > reader.len) throw new RangeError('premature EOF');
  } else reader.skip(wireType, fieldNo);
}

/** Reads an EventMetadata of `length` bytes at the reader's position, keeping only FoldEnvelope. */
function readEnvelope(reader: BinaryReader, length: number): FoldEnvelope {
  const end = reader.pos + length;
  const envelope: FoldEnvelope = { eventId: '', occurredAt: undefined, companyId: '', streamId: '' };
  while (reader.pos < end) {
    const [fieldNo, wireType] = reader.tag();
    if (wireType !== WireType.LengthDelimited) skipField(reader, wireType, fieldNo);
    else if (fieldNo === ENVELOPE_FIELDS.eventId) envelope.eventId = reader.string();
    else if (fieldNo === ENVELOPE_FIELDS.streamId) envelope.streamId = reader.string();
    else if (fieldNo === ENVELOPE_FIELDS.companyId) envelope.companyId = reader.string();
    else if (fieldNo === ENVELOPE_FIELDS.occurredAt)
      envelope.occurredAt = new Date(readTimestampMillis(reader, reader.uint32()));
    else skipField(reader, wireType, fieldNo);
  }
  if (reader.pos !== end) throw new RangeError('envelope overruns its length');
  return envelope;
}

/**
 * Decodes a stream record for a fold: the envelope (when it comes first, as every producer writes it) is
 * read for its routing fields only, the rest by the generated decoder; any other layout is decoded whole.
 * Throws what the generated decoder throws; the caller checks for a missing envelope or event.
 */
export function foldViewDecoder<R extends StreamRecord>(
  fns: ProtoMessage<R>,
): (bytes: Uint8Array) => Omit<R, 'metadata'> & { metadata?: FoldEnvelope | undefined } {
  const metadataFieldNo = firstFieldOf(
    fns.encode({ metadata: EventMetadata.fromJSON({}) } as unknown as R, new BinaryWriter()).finish(),
  );
  return (bytes) => {
    const reader = new BinaryReader(bytes);
    if (reader.len === 0) return fns.decode(bytes);
    const [fieldNo, wireType] = reader.tag();
    if (fieldNo !== metadataFieldNo || wireType !== WireType.LengthDelimited) return fns.decode(bytes);
    const envelope = readEnvelope(reader, reader.uint32());
    // The generated decoder reads on from here to the end, on the same reader.
    const rest = fns.decode(reader, reader.len - reader.pos);
    // A second envelope later in the record replaces the first, as in the generated decoder.
    if (!rest.metadata) (rest as { metadata?: FoldEnvelope }).metadata = envelope;
    return rest;
  };
}
