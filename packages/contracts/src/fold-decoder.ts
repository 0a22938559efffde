// The decoder a fold over millions of records uses (mds-replay): it reads the envelope's routing fields
// and, of the event, only the fields the fold names, straight from the bytes; every other field is
// skipped unread (a message's text, its buttons, ids no fold looks at). Field numbers and kinds are
// learned from the generated code at start-up (never written here), so a field added to the proto
// later is skipped like any unknown one. A record of any other layout, or a case whose named fields
// include one this reader does not read (a nested message other than a Timestamp, a repeated field),
// goes to the generated decoder whole.
import { EventMetadata } from './gen/mds/events/v1/metadata.js';
import type { EventCase, EventOf, ProtoMessage, StreamRecord } from './streams.js';

/** The envelope fields a fold reads: which event, of which stream, whose, and when. */
export type FoldEnvelope = Pick<EventMetadata, 'eventId' | 'occurredAt' | 'companyId' | 'streamId'>;

/** For each case of a stream, the fields of its event a fold reads. */
export type FoldFields<R extends StreamRecord> = {
  readonly [C in EventCase<R>]: readonly (keyof EventOf<R, C> & string)[];
};

/** A record as a fold that names its fields sees it: the routing envelope and those fields of its event. */
export interface FoldRecord<R extends StreamRecord, F extends FoldFields<R>> {
  metadata: FoldEnvelope;
  event: {
    [C in EventCase<R>]: { $case: C; value: Pick<EventOf<R, C>, F[C][number]> };
  }[EventCase<R>];
}

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

/** Raised inside the reader when the bytes are not in the layout it reads; the caller decodes them whole. */
class OtherLayout extends Error {}
const otherLayout = new OtherLayout();

const SHORT_STRING_BYTES = 32;
const SHORT_STRING_SLOTS = 1024;

/**
 * The strings a fold reads again and again (company ids, bot names and ids, error codes): each is decoded
 * once and then the same string is returned, which saves decoding it per record and keeps one copy in the
 * states a fold holds rather than one per record. A direct-mapped table by the bytes' FNV-1a hash; a slot
 * keeps the last string that hashed to it.
 */
class ShortStrings {
  private readonly bytes: (Buffer | undefined)[] = new Array<Buffer | undefined>(SHORT_STRING_SLOTS);
  private readonly texts: string[] = new Array<string>(SHORT_STRING_SLOTS);

  get(source: Buffer, start: number, end: number): string {
    let hash = 0x811c9dc5;
    for (let i = start; i < end; i++) hash = Math.imul(hash ^ source[i]!, 0x01000193);
    const slot = hash & (SHORT_STRING_SLOTS - 1);
    const known = this.bytes[slot];
    if (known !== undefined && known.length === end - start) {
      let i = 0;
      while (i < known.length && known[i] === source[start + i]) i++;
      if (i === known.length) return this.texts[slot]!;
    }
    const text = source.toString('utf8', start, end);
    this.bytes[slot] = Buffer.from(source.subarray(start, end));
    this.texts[slot] = text;
    return text;
  }
}

/** A read position in a record's bytes, with just what the fold's fields need. */
class WireCursor {
  pos = 0;
  /** The high 32 bits of the last varint read (its low 32 bits are returned). */
  high = 0;
  end: number;
  /** `shortStrings`: the decoder's table of strings read before (none when only tags are read). */
  constructor(
    public bytes: Buffer,
    private readonly shortStrings?: ShortStrings,
  ) {
    this.end = bytes.length;
  }

  /** Points the cursor at the start of other bytes (one cursor serves every record of a decoder). */
  reset(bytes: Buffer): void {
    this.bytes = bytes;
    this.end = bytes.length;
    this.pos = 0;
    this.high = 0;
  }

  /** A varint: returns its low 32 bits (signed), keeps its high 32 bits in `high`. */
  varint(): number {
    const b = this.bytes;
    let low = 0;
    let shift = 0;
    let byte: number;
    do {
      if (this.pos >= this.end) throw otherLayout;
      byte = b[this.pos++]!;
      if (shift < 28) low |= (byte & 0x7f) << shift;
      else if (shift === 28) {
        low |= (byte & 0x0f) << 28;
        this.high = (byte & 0x7f) >>> 4;
      } else this.high |= (byte & 0x7f) << (shift - 32);
      shift += 7;
    } while (byte & 0x80 && shift < 70);
    if (byte & 0x80) throw otherLayout;
    if (shift <= 28) this.high = 0;
    return low;
  }

  /** A varint read as a signed 64-bit integer, as a number (exact up to 2^53). */
  int64(): number {
    const low = this.varint();
    return this.high * 0x1_0000_0000 + (low >>> 0);
  }

  /** The end of a length-delimited field starting here (its length read). */
  delimited(): number {
    const length = this.varint() >>> 0;
    const end = this.pos + length;
    if (end > this.end) throw otherLayout;
    return end;
  }

  string(): string {
    const end = this.delimited();
    const text =
      this.shortStrings && end - this.pos <= SHORT_STRING_BYTES
        ? this.shortStrings.get(this.bytes, this.pos, end)
        : this.bytes.toString('utf8', this.pos, end);
    this.pos = end;
    return text;
  }

  skip(wireType: number): void {
    if (wireType === VARINT) this.varint();
    else if (wireType === LENGTH_DELIMITED) this.pos = this.delimited();
    else if (wireType === FIXED64) this.pos += 8;
    else if (wireType === FIXED32) this.pos += 4;
    else throw otherLayout; // groups: never written by our producers
    if (this.pos > this.end) throw otherLayout;
  }

  /** Epoch milliseconds of the google.protobuf.Timestamp of `end`, as the generated fromTimestamp computes them. */
  timestampMillis(end: number): number {
    let seconds = 0;
    let nanos = 0;
    while (this.pos < end) {
      const tag = this.varint();
      if (tag === TIMESTAMP_SECONDS_TAG) seconds = this.int64();
      else if (tag === TIMESTAMP_NANOS_TAG) nanos = this.varint();
      else this.skip(tag & 7);
    }
    if (this.pos !== end) throw otherLayout;
    return seconds * 1_000 + nanos / 1_000_000;
  }
}

// google.protobuf.Timestamp is a well-known type whose numbers are fixed forever: seconds = 1, nanos = 2.
const TIMESTAMP_SECONDS_TAG = (1 << 3) | VARINT;
const TIMESTAMP_NANOS_TAG = (2 << 3) | VARINT;

/** The bytes as a Buffer, without copying them. */
const bufferOf = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

/** The first tag of encoded bytes: (field number << 3) | wire type. */
function firstTag(bytes: Uint8Array): number {
  return new WireCursor(bufferOf(bytes)).varint();
}

/** The tag of the first field inside the first (length-delimited) field of encoded bytes. */
function innerTag(bytes: Uint8Array): number {
  const cursor = new WireCursor(bufferOf(bytes));
  cursor.varint();
  cursor.delimited();
  return cursor.varint();
}

type FieldKind = 'string' | 'int32' | 'uint32' | 'bool' | 'timestamp';

interface FieldReader {
  name: string;
  tag: number;
  kind: FieldKind;
}

interface CaseReader {
  $case: string;
  /** The readers by tag, or null: this case is decoded whole by the generated decoder. */
  fields: Map<number, FieldReader> | null;
  /** The event's value with the fold's fields at their defaults. */
  defaults: Record<string, unknown>;
}

const envelopeTag = (field: keyof FoldEnvelope): number =>
  firstTag(
    EventMetadata.encode({
      ...EventMetadata.fromJSON({}),
      [field]: field === 'occurredAt' ? new Date(1000) : 'x',
    }).finish(),
  );

const ENVELOPE_TAGS = {
  eventId: envelopeTag('eventId'),
  occurredAt: envelopeTag('occurredAt'),
  companyId: envelopeTag('companyId'),
  streamId: envelopeTag('streamId'),
};

/** How the generated code writes one field of one case, learned by encoding a sample of it. */
function fieldReader<R extends StreamRecord>(
  fns: ProtoMessage<R>,
  eventCase: string,
  name: string,
  empty: Record<string, unknown>,
): FieldReader | null {
  const recordWith = (value: unknown) =>
    fns.encode({ event: { $case: eventCase, value: { ...empty, [name]: value } } } as unknown as R).finish();
  try {
    return learnField(fns, eventCase, name, empty, recordWith);
  } catch {
    return null; // a type this reader does not know how to probe: the case is decoded whole
  }
}

function learnField<R extends StreamRecord>(
  fns: ProtoMessage<R>,
  eventCase: string,
  name: string,
  empty: Record<string, unknown>,
  recordWith: (value: unknown) => Uint8Array,
): FieldReader | null {
  const defaultValue = empty[name];
  let kind: FieldKind;
  let sample: unknown;
  if (typeof defaultValue === 'string') [kind, sample] = ['string', 'x'];
  else if (typeof defaultValue === 'boolean') [kind, sample] = ['bool', true];
  else if (typeof defaultValue === 'number') {
    const encodes = (value: number) => {
      try {
        return recordWith(value);
      } catch {
        return null; // out of the field's range
      }
    };
    // 64-bit and floating-point fields take 2^32 (read whole); uint32 refuses -1; int32 and enums
    // write it sign-extended to ten bytes (sint32 would write it in one: read whole).
    const minusOne = encodes(-1);
    if (encodes(2 ** 32) !== null) return null;
    if (minusOne === null) kind = 'uint32';
    else if (minusOne.length > recordWith(1).length + 5) kind = 'int32';
    else return null;
    sample = 1;
  } else if (defaultValue === undefined) {
    const parsed = fns.fromJSON({ [eventCase]: { [name]: '1970-01-01T00:00:01Z' } });
    const value = (parsed.event?.value as Record<string, unknown> | undefined)?.[name];
    if (!(value instanceof Date)) return null;
    [kind, sample] = ['timestamp', new Date(1000)];
  } else return null;
  const tag = innerTag(recordWith(sample));
  const wireType = tag & 7;
  if (wireType !== (kind === 'string' || kind === 'timestamp' ? LENGTH_DELIMITED : VARINT)) return null;
  return { name, tag, kind };
}

/** The reader of one case: its tag in the record and the readers of the fold's fields. */
function caseReader<R extends StreamRecord>(
  fns: ProtoMessage<R>,
  eventCase: string,
  names: readonly string[],
): { tag: number; reader: CaseReader } {
  const probe = fns.fromJSON({ [eventCase]: {} });
  if (probe.event?.$case !== eventCase) throw new Error(`no case ${eventCase} in this stream's record`);
  const empty = probe.event.value as Record<string, unknown>;
  const tag = firstTag(fns.encode(probe).finish());
  const readers = names.map((name) => fieldReader(fns, eventCase, name, empty));
  const whole = readers.some((r) => r === null);
  const defaults = Object.fromEntries(names.map((name) => [name, empty[name]]));
  return {
    tag,
    reader: {
      $case: eventCase,
      fields: whole ? null : new Map(readers.map((r) => [r!.tag, r!])),
      defaults,
    },
  };
}

function readField(cursor: WireCursor, kind: FieldKind): unknown {
  switch (kind) {
    case 'string':
      return cursor.string();
    case 'int32':
      return cursor.varint();
    case 'uint32':
      return cursor.varint() >>> 0;
    case 'bool': {
      const low = cursor.varint();
      return low !== 0 || cursor.high !== 0;
    }
    case 'timestamp':
      return new Date(cursor.timestampMillis(cursor.delimited()));
  }
}

function readEnvelope(cursor: WireCursor, end: number): FoldEnvelope {
  const envelope: FoldEnvelope = { eventId: '', occurredAt: undefined, companyId: '', streamId: '' };
  while (cursor.pos < end) {
    const tag = cursor.varint();
    if (tag === ENVELOPE_TAGS.eventId) envelope.eventId = cursor.string();
    else if (tag === ENVELOPE_TAGS.streamId) envelope.streamId = cursor.string();
    else if (tag === ENVELOPE_TAGS.companyId) envelope.companyId = cursor.string();
    else if (tag === ENVELOPE_TAGS.occurredAt)
      envelope.occurredAt = new Date(cursor.timestampMillis(cursor.delimited()));
    else cursor.skip(tag & 7);
  }
  if (cursor.pos !== end) throw otherLayout;
  return envelope;
}

/**
 * A decoder for records laid out as every producer writes them (the envelope, then one event): the
 * envelope's routing fields and the named fields of the event. Anything else is decoded whole by the
 * generated decoder, whose result carries every field (a superset of the view). Throws what the
 * generated decoder throws; the caller checks for a missing envelope or event.
 */
export function foldRecordDecoder<R extends StreamRecord, F extends FoldFields<R>>(
  fns: ProtoMessage<R>,
  fields: F,
): (bytes: Uint8Array) => Partial<FoldRecord<R, F>> {
  const metadataTag = firstTag(fns.encode({ metadata: EventMetadata.fromJSON({}) } as unknown as R).finish());
  const cases = new Map<number, CaseReader>();
  for (const [eventCase, names] of Object.entries<readonly string[]>(fields)) {
    const { tag, reader } = caseReader(fns, eventCase, names);
    cases.set(tag, reader);
  }
  const whole = (bytes: Uint8Array) => fns.decode(bytes) as unknown as Partial<FoldRecord<R, F>>;
  const cursor = new WireCursor(Buffer.alloc(0), new ShortStrings());
  return (bytes) => {
    cursor.reset(bufferOf(bytes));
    try {
      if (cursor.end === 0 || cursor.varint() !== metadataTag) return whole(bytes);
      const metadata = readEnvelope(cursor, cursor.delimited());
      if (cursor.pos === cursor.end) return { metadata };
      const reader = cases.get(cursor.varint());
      if (!reader?.fields) return whole(bytes);
      const end = cursor.delimited();
      // A record with anything after its event (a second envelope or event) is decoded whole.
      if (end !== cursor.end) return whole(bytes);
      const value: Record<string, unknown> = { ...reader.defaults };
      while (cursor.pos < end) {
        const tag = cursor.varint();
        const field = reader.fields.get(tag);
        if (field) value[field.name] = readField(cursor, field.kind);
        else cursor.skip(tag & 7);
      }
      if (cursor.pos !== end) return whole(bytes);
      return { metadata, event: { $case: reader.$case, value } } as unknown as Partial<FoldRecord<R, F>>;
    } catch (error) {
      if (error === otherLayout) return whole(bytes);
      throw error;
    }
  };
}
