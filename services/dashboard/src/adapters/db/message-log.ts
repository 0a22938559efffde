import type { MessengerName } from '@mds/contracts';
import type { Knex } from '@mds/db';
import { decodeCursor, encodeCursor } from '../../domain/cursor.js';

/**
 * Text is searched in a bounded window: each page looks through at most this many of the company's newest
 * messages (that match the other filters) before its cursor, and says where it stopped; "older" goes on from
 * there. A search costs the same whether a company has a thousand messages or ten million.
 */
export const TEXT_SEARCH_WINDOW = 10_000;
/** The longest text the log's rows carry: enough for a line of the table, not a whole message. */
export const TEXT_PREVIEW_LENGTH = 120;

export interface MessageFilter {
  /** One message, by its public id (the event_id of its acceptance). */
  messageId?: string | undefined;
  state?: 'new' | 'sent' | 'failed' | undefined;
  errorCode?: string | undefined;
  messenger?: MessengerName | undefined;
  botId?: string | undefined;
  /** Digits: a whole number, or its beginning. */
  phone?: string | undefined;
  /** Words the text contains, in any case (Cyrillic too), searched in a window (TEXT_SEARCH_WINDOW). */
  text?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
  cursor?: string | undefined;
  limit: number;
}

export interface MessageRow {
  message_id: string;
  state: string;
  messenger: string | null;
  bot_name: string | null;
  bot_id: string | null;
  chat_id: string | null;
  phone: string | null;
  api_key_id: string | null;
  error_code: string | null;
  attempts: number | null;
  accepted_at: Date | null;
  routed_at: Date | null;
  finished_at: Date | null;
  sort_at: Date;
  webhook_status: string | null;
  webhook_attempts: number;
}

/** A row of the log: the message and the beginning of its text (null when not known or erased). */
export interface MessageListRow extends MessageRow {
  text_preview: string | null;
}

export const MESSAGE_COLUMNS = [
  'message_id',
  'state',
  'messenger',
  'bot_name',
  'bot_id',
  'chat_id',
  'phone',
  'api_key_id',
  'error_code',
  'attempts',
  'accepted_at',
  'routed_at',
  'finished_at',
  'sort_at',
  'webhook_status',
  'webhook_attempts',
];

export interface MessagePage<Row> {
  messages: Row[];
  nextCursor: string | null;
  /** With a text search that looked through a whole window: the time it searched back to. */
  searchedBackTo: Date | null;
}

const NEWEST_FIRST = [
  { column: 'sort_at', order: 'desc' },
  { column: 'message_id', order: 'desc' },
] as const;

/** LIKE's wildcards and its escape character, taken literally. */
const likePattern = (words: string) => `%${words.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The company's messages that pass every filter but the text, from the cursor on, newest first. */
function filtered(db: Knex, companyId: string, f: MessageFilter): Knex.QueryBuilder {
  const q = db('messages').where('company_id', companyId);
  if (f.messageId) q.where('message_id', f.messageId);
  if (f.state) q.where('state', f.state);
  if (f.errorCode) q.where('error_code', f.errorCode);
  if (f.messenger) q.where('messenger', f.messenger);
  if (f.botId) q.where('bot_id', f.botId);
  if (f.phone) {
    // A whole number is an equality on the index; a beginning is a range on the same index.
    if (f.phone.length >= 11) q.where('phone', f.phone);
    else q.where('phone', '>=', f.phone).andWhere('phone', '<', `${f.phone}\u{10ffff}`);
  }
  if (f.from) q.where('sort_at', '>=', f.from);
  if (f.to) q.where('sort_at', '<', f.to);
  const cursor = f.cursor ? decodeCursor(f.cursor) : undefined;
  if (cursor) q.whereRaw('(sort_at, message_id) < (?, ?)', [new Date(cursor.at), cursor.id]);
  return q.orderBy([...NEWEST_FIRST]);
}

const cursorOf = (row: { sort_at: Date; message_id: string }) =>
  encodeCursor({ at: row.sort_at.getTime(), id: row.message_id });

/**
 * One page of a company's messages, newest first, and the cursor of the next page (null at the end). With
 * a text, the page holds the matches among the next TEXT_SEARCH_WINDOW messages (`window` to change it);
 * when those are fewer than a page, the cursor goes on from the window's oldest message.
 */
export async function listMessages<Row extends MessageRow = MessageListRow>(
  db: Knex,
  companyId: string,
  f: MessageFilter,
  o: { window?: number; columns?: (string | Knex.Raw)[] } = {},
): Promise<MessagePage<Row>> {
  const columns = o.columns ?? [
    ...MESSAGE_COLUMNS,
    db.raw('left(text, ?) as text_preview', [TEXT_PREVIEW_LENGTH]),
  ];
  if (!f.text) {
    const rows = (await filtered(db, companyId, f)
      .limit(f.limit + 1)
      .select(columns)) as Row[];
    const page = rows.slice(0, f.limit);
    const last = page.at(-1);
    return {
      messages: page,
      nextCursor: rows.length > f.limit && last ? cursorOf(last) : null,
      searchedBackTo: null,
    };
  }
  const window = o.window ?? TEXT_SEARCH_WINDOW;
  // The window first (the index's order, nothing else read), then the text among its rows: a case-insensitive
  // match by Unicode's rules whatever the database's own locale ("und-x-icu").
  const rows = (await db
    .with('scanned', filtered(db, companyId, f).limit(window).select('*'))
    .from('scanned')
    .whereRaw(`(text collate "und-x-icu") ilike ? escape '\\'`, [likePattern(f.text)])
    .orderBy([...NEWEST_FIRST])
    .limit(f.limit + 1)
    .select(columns)) as Row[];
  const page = rows.slice(0, f.limit);
  const last = page.at(-1);
  if (rows.length > f.limit && last)
    return { messages: page, nextCursor: cursorOf(last), searchedBackTo: null };
  // Fewer matches than a page: the window was searched whole. If the company has messages past it, the next
  // page searches on from the window's oldest message.
  const [edge, beyond] = await filtered(db, companyId, f)
    .offset(window - 1)
    .limit(2)
    .select<{ sort_at: Date; message_id: string }[]>('sort_at', 'message_id');
  return edge && beyond
    ? { messages: page, nextCursor: cursorOf(edge), searchedBackTo: edge.sort_at }
    : { messages: page, nextCursor: null, searchedBackTo: null };
}

/** A row of an export: the whole message, its text whole. */
export interface ExportRow extends MessageRow {
  text: string | null;
}

/**
 * A company's messages that pass the filter, newest first, in batches read one after another (each a page by
 * cursor: nothing held but the batch), at most `maxRows` of them; a text search looks through at most
 * `maxRows` messages.
 */
export async function* exportMessages(
  db: Knex,
  companyId: string,
  f: Omit<MessageFilter, 'cursor' | 'limit'>,
  o: { maxRows: number; batch: number },
): AsyncGenerator<ExportRow[]> {
  let cursor: string | undefined;
  let rows = 0;
  let scanned = 0;
  while (rows < o.maxRows && scanned < o.maxRows) {
    const limit = Math.min(o.batch, o.maxRows - rows);
    const page = await listMessages<ExportRow>(
      db,
      companyId,
      { ...f, cursor, limit },
      { window: limit, columns: [...MESSAGE_COLUMNS, 'text'] },
    );
    scanned += limit;
    rows += page.messages.length;
    if (page.messages.length > 0) yield page.messages;
    if (!page.nextCursor) return;
    cursor = page.nextCursor;
  }
}
