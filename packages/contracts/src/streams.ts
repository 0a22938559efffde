import type { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import { foldRecordDecoder, type FoldFields, type FoldRecord } from './fold-decoder.js';
import type { EventMetadata } from './gen/mds/events/v1/metadata.js';
import { withCleanStrings } from '@mds/text';
import { activeTraceContext, type TraceContext } from './trace-context.js';

/** What ts-proto generates for every message type. */
export interface ProtoMessage<T> {
  encode(message: T, writer?: BinaryWriter): BinaryWriter;
  decode(input: BinaryReader | Uint8Array, length?: number): T;
  fromJSON(object: unknown): T;
  toJSON(message: T): unknown;
}

/** A stream record: the envelope plus exactly one event of the stream's oneof. */
export interface StreamRecord {
  metadata?: EventMetadata | undefined;
  event?: { $case: string; value: unknown } | undefined;
}

/** The oneof case names of a stream record type, e.g. "messageAccepted" | "messageSent" | ... */
export type EventCase<R extends StreamRecord> = NonNullable<R['event']>['$case'];

/** The payload type of one case of a stream. */
export type EventOf<R extends StreamRecord, C extends EventCase<R>> = Extract<
  NonNullable<R['event']>,
  { $case: C }
>['value'];

/** A stream record known to carry an event (decoding guarantees it). */
export type Complete<R extends StreamRecord> = R & {
  metadata: EventMetadata;
  event: NonNullable<R['event']>;
};

/** "messageAccepted" -> "MessageAccepted": the event type name written in EventMetadata.type and headers. */
export function eventTypeName(eventCase: string): string {
  return eventCase.charAt(0).toUpperCase() + eventCase.slice(1);
}

export class UndecodableEventError extends Error {
  override readonly name = 'UndecodableEventError';
}

/** Binary (and JSON, for export) form of one stream's records. */
export interface StreamCodec<R extends StreamRecord> {
  /** Fully qualified protobuf type of the record, e.g. "mds.events.v1.MessageEvent". */
  readonly messageType: string;
  /**
   * The record's bytes. A string field holding a character no text may hold (text.ts) is written with U+FFFD
   * in its place and reported to `onUncleanText` listeners: whatever a producer forgot to clean, no event in
   * the log carries a NUL, a control character, a lone surrogate or a non-character.
   */
  encode(record: R): Uint8Array;
  /** Decodes a record; throws UndecodableEventError when it has no envelope or no event it knows. */
  decode(bytes: Uint8Array): Complete<R>;
  /**
   * A decoder for a fold that reads only the named fields of each case: the envelope's routing fields
   * and those fields, the rest skipped unread. Same errors as `decode`.
   */
  foldDecoder<F extends FoldFields<R>>(fields: F): (bytes: Uint8Array) => FoldRecord<R, F>;
  /**
   * The envelope alone, whatever the event (one this build does not know included); throws
   * UndecodableEventError when the bytes are no record of this stream, or carry no envelope.
   */
  envelope(bytes: Uint8Array): EventMetadata;
  toJSON(record: R): unknown;
  fromJSON(json: unknown): R;
}

export function streamCodec<R extends StreamRecord>(
  messageType: string,
  fns: ProtoMessage<R>,
): StreamCodec<R> {
  return {
    messageType,
    encode: (record) => fns.encode(withCleanStrings(record, messageType)).finish(),
    decode: (bytes) =>
      complete(
        messageType,
        decodeOrThrow(messageType, (b) => fns.decode(b), bytes),
        (r) => r.type,
      ),
    foldDecoder: (fields) => {
      const decodeRecord = foldRecordDecoder(fns, fields);
      return (bytes) =>
        complete(messageType, decodeOrThrow(messageType, decodeRecord, bytes), () => '') as never;
    },
    envelope: (bytes) => {
      let record: R;
      try {
        record = fns.decode(bytes);
      } catch (error) {
        throw new UndecodableEventError(`not a ${messageType}: ${(error as Error).message}`);
      }
      if (!record.metadata?.eventId) throw new UndecodableEventError(`${messageType} without metadata`);
      return record.metadata;
    },
    toJSON: (record) => fns.toJSON(record),
    fromJSON: (json) => fns.fromJSON(json),
  };
}

function decodeOrThrow<T>(messageType: string, decode: (bytes: Uint8Array) => T, bytes: Uint8Array): T {
  try {
    return decode(bytes);
  } catch (error) {
    throw new UndecodableEventError(`not a ${messageType}: ${(error as Error).message}`);
  }
}

/** The record, once it is known to carry an envelope and an event this build knows. */
function complete<M, R extends { metadata?: M | undefined; event?: unknown }>(
  messageType: string,
  record: R,
  typeOf: (metadata: M) => string,
): R & { metadata: M; event: NonNullable<R['event']> } {
  if (!record.metadata) throw new UndecodableEventError(`${messageType} without metadata`);
  // An event type added by a newer producer decodes with no case set: the caller decides to skip it.
  if (!record.event) {
    const type = typeOf(record.metadata);
    throw new UndecodableEventError(
      `${messageType} ${type ? `${type} ` : ''}carries no event this build knows`,
    );
  }
  return record as R & { metadata: M; event: NonNullable<R['event']> };
}

export interface NewEvent<R extends StreamRecord> {
  eventId: string;
  occurredAt: Date;
  companyId: string;
  streamId: string;
  correlationId?: string;
  causationId?: string;
  producer: string;
  event: NonNullable<R['event']>;
  /** The trace the event continues; by default that of the span active where the event is made. */
  trace?: TraceContext;
}

/**
 * Builds a stream record with its envelope; ids and time come from the caller. The envelope carries the
 * trace context of the active span (empty when tracing is off), so the event's consumers continue its trace.
 */
export function newEvent<R extends StreamRecord>(e: NewEvent<R>): Complete<R> {
  const { traceparent, tracestate } = e.trace ?? activeTraceContext();
  return {
    metadata: {
      eventId: e.eventId,
      type: eventTypeName(e.event.$case),
      occurredAt: e.occurredAt,
      companyId: e.companyId,
      streamId: e.streamId,
      correlationId: e.correlationId ?? '',
      causationId: e.causationId ?? '',
      producer: e.producer,
      traceparent,
      tracestate,
    },
    event: e.event,
  } as Complete<R>;
}
