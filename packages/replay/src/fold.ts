// What one shard does with the records of its partitions: decodes them through the contracts codecs,
// turns each into a row of its event's table (export) and folds them into the state of their message,
// request, webhook delivery or client link. Everything a fold needs shares a partition (the topics are
// keyed by message, request, webhook and company), so folds are kept per partition and never need
// another shard's.
import {
  endpointIdOf,
  messengerNameOf,
  topics,
  UndecodableEventError,
  type Complete,
  type StreamRecord,
} from '@mds/contracts';
import {
  countSummaryStates,
  foldInto,
  foldSummaryStates,
  MESSAGE_STATE_FIELDS,
  MESSAGE_SUMMARY_FIELDS,
  REQUEST_STATE_FIELDS,
  type EventState,
  type StateRecord,
  type Summary,
  type SummaryState,
} from '@mds/message-state';
import type { Cell, TableReader } from './schema.js';
import { streamSpec, type StreamKey } from './streams.js';

/** Streams whose events fold into message and request states (the gateway's read model). */
export const STATE_STREAMS: readonly StreamKey[] = ['message', 'clientRequest'];

/** fold: the states themselves; summary: only their summary parts (compact); export: rows as well. */
export type ShardMode = 'fold' | 'summary' | 'export';

/** A shard's summary: counts (which add up) and the latencies (which merge into percentiles). */
export interface SummaryPart {
  summary: Summary;
  acceptedToSentMs: Float64Array;
}

/** One webhook delivery (stream webhook_id): its attempts and how it ended. */
export interface WebhookFold {
  attempts: Cell[][];
  outcome: 'delivered' | 'abandoned' | null;
}

/** One link of a client to a bot chat, folded from the client stream. */
export interface LinkFold {
  company_id: string;
  phone_number: string;
  messenger: string | null;
  bot_id: string;
  chat_id: string;
  user_id: string;
  state: 'linked' | 'unlinked';
  reachable: boolean;
  unreachable_reason: string | null;
  unlink_reason: string | null;
  linked_at: number;
  updated_at: number;
}

/** The folds of one partition (`topic/partition`). */
export interface PartitionFold {
  states?: Map<string, EventState>;
  /** summary mode: only what the summary counts of each state. */
  summaryStates?: Map<string, SummaryState>;
  webhooks?: Map<string, WebhookFold>;
  links?: Map<string, LinkFold>;
}

export interface Filter {
  companyId?: string;
  /** Only events that occurred before this time (epoch ms). */
  toMs?: number;
}

export interface ShardOutput {
  events: number;
  /** Records this build cannot decode (an event type from a newer producer, or garbage). */
  skipped: number;
  /** Rows of the typed event tables, by table name (export mode). */
  rows: Record<string, Cell[][]>;
  /** Rows of the `events` table: the envelope and the event as protobuf JSON (export mode). */
  envelopes: Cell[][];
  folds: Record<string, PartitionFold>;
  /** summary mode: the shard's summary, its states dropped. */
  summary?: SummaryPart;
}

/** Replaces the shard's states by their summary (what `summary` needs, a fraction of the size). */
export function summarizeShard(output: ShardOutput): void {
  const folds = Object.values(output.folds);
  const { summary, latencies } = countSummaryStates(
    (function* () {
      for (const f of folds) if (f.summaryStates) yield* f.summaryStates.values();
    })(),
  );
  output.summary = { summary, acceptedToSentMs: Float64Array.from(latencies) };
  output.folds = {};
}

const DAY_MS = 86_400_000;

// The message and request streams decoded for their fold: the routing envelope and what evolve reads.
const STATE_DECODERS = {
  message: topics.message.codec.foldDecoder(MESSAGE_STATE_FIELDS),
  clientRequest: topics.clientRequest.codec.foldDecoder(REQUEST_STATE_FIELDS),
};
// A summary's: a request's metadata unread (absent, as in events without it; the summary counts none of it).
const SUMMARY_DECODERS = {
  message: topics.message.codec.foldDecoder(MESSAGE_SUMMARY_FIELDS) as (bytes: Buffer) => StateRecord,
  clientRequest: STATE_DECODERS.clientRequest,
};

/** Folds and rows for the records of one shard; feed it partition by partition, batch by batch. */
export class ShardFolder {
  readonly output: ShardOutput;

  /** `tables`: the event tables (schema.ts eventTables), which only export mode reads. */
  constructor(
    private readonly mode: ShardMode,
    private readonly filter: Filter,
    prior: Record<string, PartitionFold> = {},
    private readonly tables: ReadonlyMap<string, TableReader> = new Map(),
  ) {
    this.output = { events: 0, skipped: 0, rows: {}, envelopes: [], folds: prior };
  }

  /** Handles the records of one fetch of one partition (value bytes and offsets, in log order). */
  handle(
    stream: StreamKey,
    topic: string,
    partition: number,
    messages: readonly { offset: string; value: Buffer | null }[],
  ): void {
    const fold = (this.output.folds[`${topic}/${partition}`] ??= {});
    const isState = stream === 'message' || stream === 'clientRequest';
    // Without rows to export, the message and request streams need only what their fold reads.
    if (isState && this.mode === 'summary') {
      foldSummaryStates(
        (fold.summaryStates ??= new Map<string, SummaryState>()),
        this.decodeForFold(SUMMARY_DECODERS[stream], messages),
      );
      return;
    }
    if (isState && this.mode === 'fold') {
      foldInto(
        (fold.states ??= new Map<string, EventState>()),
        this.decodeForFold(STATE_DECODERS[stream], messages),
      );
      return;
    }
    const codec = streamSpec(stream).codec;
    const folded: StateRecord[] = [];
    for (const m of messages) {
      const record = this.decode(m.value, (bytes) => codec.decode(bytes));
      if (!record) continue;
      if (isState) folded.push(record as StateRecord);
      if (this.mode !== 'export') continue;
      if (stream === 'webhook') this.foldWebhook(fold, record, topic, partition, m.offset);
      else if (stream === 'client') foldLink((fold.links ??= new Map<string, LinkFold>()), record);
      this.addRows(stream, record, topic, partition, m.offset);
    }
    if (folded.length > 0) foldInto((fold.states ??= new Map<string, EventState>()), folded);
  }

  private decodeForFold(
    decode: (bytes: Buffer) => StateRecord,
    messages: readonly { value: Buffer | null }[],
  ): StateRecord[] {
    const records: StateRecord[] = [];
    for (const m of messages) {
      const record = this.decode<StateRecord>(m.value, decode);
      if (record) records.push(record);
    }
    return records;
  }

  /** The record, or undefined when it is undecodable (counted as skipped) or filtered out. */
  private decode<T extends { metadata: { companyId: string; occurredAt?: Date | undefined } }>(
    value: Buffer | null,
    decode: (bytes: Buffer) => T,
  ): T | undefined {
    if (!value) return undefined;
    let record: T;
    try {
      record = decode(value);
    } catch (error) {
      if (error instanceof UndecodableEventError) {
        this.output.skipped++;
        return undefined;
      }
      throw error;
    }
    const { companyId, toMs } = this.filter;
    const meta = record.metadata;
    if (companyId !== undefined && meta.companyId !== companyId) return undefined;
    if (toMs !== undefined && (meta.occurredAt?.getTime() ?? 0) >= toMs) return undefined;
    this.output.events++;
    return record;
  }

  private addRows(
    stream: StreamKey,
    record: Complete<StreamRecord>,
    topic: string,
    partition: number,
    offset: string,
  ): void {
    const eventCase = record.event.$case;
    const tableKey = `${stream}/${eventCase}`;
    const table = this.tables.get(tableKey);
    if (!table) return;
    const meta = record.metadata as unknown as Record<string, unknown>;
    const occurred = record.metadata.occurredAt?.getTime() ?? 0;
    const day = Math.floor(occurred / DAY_MS) * DAY_MS;
    const row: Cell[] = [];
    for (const c of table.envelope) row.push(c.get(meta));
    row.push(topic, partition, offset, day);
    const value = record.event.value as Record<string, unknown>;
    for (const c of table.fields) row.push(c.get(value));
    (this.output.rows[table.name] ??= []).push(row);
    const { metadata: _m, ...event } = streamSpec(stream).codec.toJSON(record) as Record<string, unknown>;
    const m = record.metadata;
    this.output.envelopes.push([
      m.eventId,
      m.streamId,
      m.type,
      m.occurredAt ? m.occurredAt.getTime() : null,
      m.companyId,
      m.producer,
      m.correlationId,
      m.causationId,
      topic,
      partition,
      offset,
      JSON.stringify(event),
      day,
    ]);
  }

  private foldWebhook(
    fold: PartitionFold,
    record: Complete<StreamRecord>,
    topic: string,
    partition: number,
    offset: string,
  ): void {
    const webhooks = (fold.webhooks ??= new Map<string, WebhookFold>());
    const id = record.metadata.streamId;
    const delivery = webhooks.get(id) ?? { attempts: [], outcome: null };
    webhooks.set(id, delivery);
    const e = record.event;
    if (e.$case === 'webhookDelivered') delivery.outcome = 'delivered';
    else if (e.$case === 'webhookDeliveryAbandoned') delivery.outcome = 'abandoned';
    else if (e.$case === 'webhookAttempted') {
      const table = this.tables.get('webhook/webhookAttempted')!;
      const value = e.value as Record<string, unknown>;
      const field = (name: string) => table.fields.find((c) => c.name === name)!.get(value);
      const at = record.metadata.occurredAt?.getTime() ?? 0;
      delivery.attempts.push([
        id,
        record.metadata.companyId,
        field('kind'),
        field('subject_id'),
        field('attempt'),
        field('url'),
        endpointIdOf(field('endpoint_id') as string | undefined),
        field('status_code'),
        field('latency_ms'),
        field('outcome'),
        field('error'),
        at,
        field('next_attempt_at'),
        topic,
        partition,
        offset,
      ]);
    }
  }
}

const REASONS: Record<number, string> = { 1: 'blocked', 2: 'stopped', 3: 'deactivated', 4: 'send_rejected' };

interface ChatValue {
  messenger: number;
  botId: string;
  chatId: string;
  userId: string;
}

/** The client stream's events on the links of one company (keyed company/bot/chat). */
function foldLink(links: Map<string, LinkFold>, record: Complete<StreamRecord>): void {
  const company = record.metadata.companyId;
  const at = record.metadata.occurredAt?.getTime() ?? 0;
  const e = record.event as { $case: string; value: Record<string, unknown> };
  const chat = e.value.chat as ChatValue | undefined;
  const key = chat ? `${company}/${chat.botId}/${chat.chatId}` : '';
  switch (e.$case) {
    case 'clientLinked': {
      const existing = links.get(key);
      links.set(key, {
        company_id: company,
        phone_number: e.value.phoneNumber as string,
        messenger: messengerNameOf(chat!.messenger) ?? null,
        bot_id: chat!.botId,
        chat_id: chat!.chatId,
        user_id: chat!.userId,
        state: 'linked',
        reachable: true,
        unreachable_reason: null,
        unlink_reason: null,
        linked_at: existing?.state === 'linked' ? existing.linked_at : at,
        updated_at: at,
      });
      break;
    }
    case 'clientUnlinked': {
      const link = links.get(key);
      if (link) Object.assign(link, { state: 'unlinked', unlink_reason: e.value.reason, updated_at: at });
      break;
    }
    case 'clientLinkReachabilityChanged': {
      const link = links.get(key);
      if (link)
        Object.assign(link, {
          reachable: e.value.reachable,
          unreachable_reason: e.value.reachable ? null : (REASONS[e.value.reason as number] ?? null),
          updated_at: at,
        });
      break;
    }
    case 'clientPhoneChanged':
      for (const link of links.values())
        if (link.company_id === company && link.phone_number === e.value.oldPhone) {
          link.phone_number = e.value.newPhone as string;
          link.updated_at = at;
        }
      break;
    default:
  }
}
