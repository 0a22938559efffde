// The typed tables of an export, derived from the compiled protobuf descriptor set @mds/contracts ships
// (dist/mds.binpb): one table per event type, its columns the envelope's fields and the event's own,
// nested messages flattened (chat.bot_id -> chat_bot_id), enums as their names, timestamps as
// timestamps. A field added to a proto becomes a column with no change here.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import {
  createFileRegistry,
  fromBinary,
  ScalarType,
  type DescEnum,
  type DescField,
  type DescMessage,
} from '@bufbuild/protobuf';
import { FileDescriptorSetSchema } from '@bufbuild/protobuf/wkt';
import { messengerNameOf } from '@mds/contracts';
import { replayStreams, type StreamKey } from './streams.js';

/** DuckDB column types the export writes. */
export type ColumnType =
  'varchar' | 'timestamptz' | 'date' | 'boolean' | 'integer' | 'bigint' | 'double' | 'blob' | 'json';

export interface Column {
  name: string;
  type: ColumnType;
  /** Personal data: a person's phone number, what was written to them, or their messenger ids. */
  personal: boolean;
  /** Where the value comes from (for the docs): a proto field path, or what the fold computes. */
  source: string;
}

/** A cell as a shard produces it: plain values that cross a thread boundary cheaply. */
export type Cell = string | number | boolean | null | Uint8Array;

/** Reads a field of a decoded (ts-proto) record into a cell. */
type Getter = (value: Record<string, unknown>) => Cell;

interface Extractor extends Column {
  get: Getter;
}

export interface EventTable {
  /** e.g. "message_accepted" */
  name: string;
  /** e.g. "MessageAccepted": the type in the envelope and the content-type header */
  eventType: string;
  /** ts-proto oneof case, e.g. "messageAccepted" */
  eventCase: string;
  stream: StreamKey;
  protoMessage: string;
  columns: Column[];
}

const PERSONAL =
  /(^|_)(phone|phone_number|old_phone|new_phone|text|chat_id|user_id|buttons|request_metadata_entries)$/;

/** The column every event table carries besides its fields (where it sits in the log, its day). */
export const LOG_COLUMNS: Column[] = [
  { name: 'topic', type: 'varchar', personal: false, source: 'the topic the record was read from' },
  { name: 'partition', type: 'integer', personal: false, source: 'its partition' },
  { name: 'offset', type: 'bigint', personal: false, source: 'its offset' },
  {
    name: 'day',
    type: 'date',
    personal: false,
    source: 'the UTC day of occurred_at (the Parquet folder day=YYYY-MM-DD)',
  },
];

const MESSENGER_ENUM = 'mds.events.v1.Messenger';

let registry: ReturnType<typeof createFileRegistry> | undefined;

/** Where the compiled descriptor set is (built with @mds/contracts). */
export function descriptorSetPath(): string {
  return createRequire(import.meta.url).resolve('@mds/contracts/mds.binpb');
}

function loadRegistry() {
  registry ??= createFileRegistry(fromBinary(FileDescriptorSetSchema, readFileSync(descriptorSetPath())));
  return registry;
}

/** An enum's values by number, as names: "STATE_SENT" of enum State -> "sent"; the zero (unspecified) value -> null. */
function enumNames(e: DescEnum): Map<number, string | null> {
  const prefix = e.sharedPrefix ? `${e.sharedPrefix}` : '';
  const names = new Map<number, string | null>();
  for (const v of e.values) {
    const bare = v.name.startsWith(prefix.toUpperCase()) ? v.name.slice(prefix.length) : v.name;
    names.set(v.number, v.number === 0 ? null : bare.replace(/^_/, '').toLowerCase());
  }
  return names;
}

function scalarType(t: ScalarType): ColumnType {
  switch (t) {
    case ScalarType.BOOL:
      return 'boolean';
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return 'double';
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return 'integer';
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      return 'bigint';
    case ScalarType.BYTES:
      return 'blob';
    default:
      return 'varchar';
  }
}

/** JSON of a repeated or map field (ts-proto values; enums stay numbers, as protobuf JSON allows). */
function jsonCell(value: unknown): Cell {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value) && value.length === 0) return '[]';
  return JSON.stringify(value);
}

function extractors(message: DescMessage, prefix: string, path: string, depth: number): Extractor[] {
  const out: Extractor[] = [];
  for (const field of message.fields) {
    const key = field.jsonName;
    const name = `${prefix}${field.name}`;
    const source = `${path}${field.name}`;
    const personal = PERSONAL.test(field.name) || PERSONAL.test(name);
    const at = (v: Record<string, unknown>) => v[key];
    out.push(...fieldExtractors(field, name, source, personal, at, depth));
  }
  return out;
}

function fieldExtractors(
  field: DescField,
  name: string,
  source: string,
  personal: boolean,
  at: (v: Record<string, unknown>) => unknown,
  depth: number,
): Extractor[] {
  switch (field.fieldKind) {
    case 'scalar': {
      const type = scalarType(field.scalar);
      const get: Getter =
        type === 'bigint'
          ? (v) => {
              const x = at(v);
              if (typeof x === 'string') return x;
              return typeof x === 'number' || typeof x === 'bigint' ? x.toString() : null;
            }
          : (v) => (at(v) ?? null) as Cell;
      return [{ name, type, personal, source, get }];
    }
    case 'enum': {
      const names = enumNames(field.enum);
      // A messenger is named by the catalogue (a registered one may use a number the enum does not name).
      const nameOf =
        field.enum.typeName === MESSENGER_ENUM
          ? (code: number) => messengerNameOf(code) ?? names.get(code) ?? null
          : (code: number) => names.get(code) ?? null;
      return [
        {
          name,
          type: 'varchar',
          personal,
          source: `${source} (enum ${field.enum.name}, as a name)`,
          get: (v) => nameOf(at(v) as number),
        },
      ];
    }
    case 'message': {
      if (field.message.typeName === 'google.protobuf.Timestamp') {
        return [
          {
            name,
            type: 'timestamptz',
            personal,
            source,
            get: (v) => {
              const x = at(v) as Date | undefined;
              return x ? x.getTime() : null;
            },
          },
        ];
      }
      if (depth >= 3) return [{ name, type: 'json', personal, source, get: (v) => jsonCell(at(v)) }];
      return extractors(field.message, `${name}_`, `${source}.`, depth + 1).map((e) => ({
        ...e,
        personal: e.personal || personal,
        get: (v: Record<string, unknown>) => {
          const inner = at(v) as Record<string, unknown> | undefined;
          return inner ? e.get(inner) : null;
        },
      }));
    }
    default:
      return [
        {
          name,
          type: 'json',
          personal,
          source: `${source} (${field.fieldKind === 'map' ? 'map' : 'repeated'}, as JSON)`,
          get: (v) => jsonCell(at(v)),
        },
      ];
  }
}

/** Envelope, log position, then the event's fields: how a row of an event table is read. */
export interface TableReader extends EventTable {
  /** The event's own fields from the record's oneof value (envelope and log columns are added around). */
  fields: Extractor[];
  envelope: Extractor[];
}

let readers: Map<string, TableReader> | undefined;

/** Every event table, keyed by `${stream}/${eventCase}`. */
export function eventTables(): Map<string, TableReader> {
  if (readers) return readers;
  const reg = loadRegistry();
  const metadata = reg.getMessage('mds.events.v1.EventMetadata');
  if (!metadata) throw new Error('the descriptor set has no mds.events.v1.EventMetadata');
  const envelope = extractors(metadata, '', 'metadata.', 1);
  const taken = new Set([...envelope.map((c) => c.name), ...LOG_COLUMNS.map((c) => c.name)]);
  readers = new Map();
  for (const [stream, spec] of replayStreams()) {
    const record = reg.getMessage(spec.codec.messageType);
    if (!record) throw new Error(`the descriptor set has no ${spec.codec.messageType}`);
    const oneof = record.oneofs.find((o) => o.name === 'event');
    if (!oneof) continue;
    for (const field of oneof.fields) {
      if (field.fieldKind !== 'message') continue;
      const eventType = field.message.name;
      // Every delivery topic carries DeliveryEvent: their tables are one (rows say which topic).
      const key = `${stream}/${field.jsonName}`;
      const name = field.name;
      const fields = extractors(field.message, '', `${field.message.name}.`, 1).map((e) =>
        taken.has(e.name) ? { ...e, name: `event_${e.name}` } : e,
      );
      readers.set(key, {
        name,
        eventType,
        eventCase: field.jsonName,
        stream,
        protoMessage: field.message.typeName,
        columns: [...envelope, ...LOG_COLUMNS, ...fields],
        fields,
        envelope,
      });
    }
  }
  return readers;
}
