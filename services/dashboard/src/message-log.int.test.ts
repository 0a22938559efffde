// Finding any message, against real Kafka and PostgreSQL: the log's rows carry the text and the event id; it is
// searched by event id and by words of the text (any case, Cyrillic too) in a stated window; the export streams
// the filtered log as CSV, with a row limit, recorded in the audit log.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Knex } from '@mds/db';
import { exportMessages, listMessages, TEXT_SEARCH_WINDOW } from './adapters/db/message-log.js';
import { SCHEMA } from './adapters/db/migrations.js';
import {
  bot,
  companyWithOwner,
  eventually,
  messageStory,
  publishStory,
  startDashboardStack,
  type DashboardStack,
} from '../test/support.js';

let stack: DashboardStack;
let db: Knex;

beforeAll(async () => {
  stack = await startDashboardStack({ dispatcher: false });
  db = await openDatabase({ url: stack.databaseUrl, schema: SCHEMA, poolMax: 2 });
}, 180_000);
afterAll(async () => {
  await db?.destroy();
  await stack?.stop();
});

interface Row {
  message_id: string;
  state: string;
  messenger: string | null;
  text_preview: string | null;
  error_code: string | null;
}
interface Page {
  messages: Row[];
  next_cursor: string | null;
  text_search?: { window: number; searched_back_to: string | null };
}

const TEXTS = [
  'Ваш заказ №1042 отправлен',
  'Your order has SHIPPED',
  '=HYPERLINK("http://evil.example","click")',
  'Код для входа: 4711',
  `Long ${'x'.repeat(300)}`,
  'Счёт оплачен, спасибо',
];

/** A company with one message per text, a minute apart (the first the oldest); answers its owner and ids. */
async function companyWithTexts(name: string) {
  const { owner, companyId } = await companyWithOwner(stack, name);
  const { botId } = await bot(stack, companyId);
  const start = Date.now() - 60 * 60_000;
  const stories = TEXTS.map((text, i) =>
    messageStory({
      companyId,
      botId,
      text,
      phone: `7916123456${i}`,
      at: new Date(start + i * 60_000),
      outcome: i === 2 ? { sent: false, errorCode: 'CLIENT_NOT_FOUND' } : { sent: true },
    }),
  );
  for (const s of stories) await publishStory(stack.publisher, s);
  await eventually('every message decided', async () => {
    const rows = (await owner.call<Page>('GET', '/messages?limit=200')).body.messages;
    return rows.length === TEXTS.length && rows.every((r) => r.state !== 'new') ? rows : undefined;
  });
  return { owner, companyId, ids: stories.map((s) => s.id) };
}

describe('the message log', () => {
  it('shows each message with its event id and the beginning of its text, and finds one by its event id', async () => {
    const { owner, ids } = await companyWithTexts('Texts');
    const rows = (await owner.call<Page>('GET', '/messages')).body.messages;
    expect(rows.map((r) => r.message_id)).toEqual([...ids].reverse());
    expect(rows.map((r) => r.text_preview)).toEqual(
      [...TEXTS].reverse().map((t) => (t.length > 120 ? t.slice(0, 120) : t)),
    );
    expect(rows[0]!.messenger).toBe('telegram');

    const one = await owner.call<Page>('GET', `/messages?event_id=${ids[3]!.toUpperCase()}`);
    expect(one.body.messages.map((r) => r.message_id)).toEqual([ids[3]]);
    // Another company's message, or nobody's, is not found: an empty page, as for any search.
    const { owner: stranger } = await companyWithOwner(stack, 'Stranger');
    expect((await stranger.call<Page>('GET', `/messages?event_id=${ids[3]}`)).body.messages).toEqual([]);
    expect((await owner.call<Page>('GET', `/messages?event_id=${randomUUID()}`)).body.messages).toEqual([]);
    const bad = await owner.call<{ code: string; errors: { pointer: string }[] }>(
      'GET',
      `/messages?event_id=nope&text=${'y'.repeat(201)}`,
    );
    expect([bad.status, bad.body.code]).toEqual([422, 'validation_failed']);
    expect(bad.body.errors.map((e) => e.pointer).sort()).toEqual(['#/event_id', '#/text']);
  });

  it('searches the text in any case, Cyrillic too, with the other filters, and states the window it searched', async () => {
    const { owner, ids } = await companyWithTexts('Search');
    const found = async (query: string) => {
      const page = (await owner.call<Page>('GET', `/messages?${query}`)).body;
      return { ids: page.messages.map((r) => r.message_id), page };
    };
    const words = (w: string) => found(`text=${encodeURIComponent(w)}`);
    expect((await words('ЗАКАЗ')).ids).toEqual([ids[0]]);
    expect((await words('shipped')).ids).toEqual([ids[1]]);
    expect((await words('счёт')).ids).toEqual([ids[5]]);
    // Wildcards are words like any other.
    expect((await words('%')).ids).toEqual([]);
    expect((await words('4_11')).ids).toEqual([]);
    expect((await words('  4711 ')).ids).toEqual([ids[3]]);
    const both = await words('о');
    expect(both.ids).toEqual([ids[5], ids[3], ids[0]]);
    // A company smaller than the window: searched to its oldest message, nothing further to look at.
    expect(both.page.next_cursor).toBeNull();
    expect(both.page.text_search).toEqual({ window: TEXT_SEARCH_WINDOW, searched_back_to: null });
    expect((await found('text=hyperlink&state=failed&error_code=CLIENT_NOT_FOUND')).ids).toEqual([ids[2]]);
    expect((await found('text=hyperlink&state=sent')).ids).toEqual([]);
    expect((await found(`text=order&phone=79161234561`)).ids).toEqual([ids[1]]);
    // Pages of matches follow each other by cursor.
    const first = await found('text=о&limit=2');
    expect(first.ids).toEqual([ids[5], ids[3]]);
    const second = await found(`text=о&limit=2&cursor=${first.page.next_cursor}`);
    expect(second.ids).toEqual([ids[0]]);
    expect(second.page.next_cursor).toBeNull();
  });

  it('looks through a window of messages per page and goes on from where it stopped', async () => {
    const { companyId, ids } = await companyWithTexts('Window');
    const search = (cursor?: string) =>
      listMessages(db, companyId, { text: 'о', limit: 50, cursor }, { window: 2 });
    // Newest first: the window holds the two newest (5 and 4); only 5 matches, and the search stopped at 4.
    const first = await search();
    expect(first.messages.map((r) => r.message_id)).toEqual([ids[5]]);
    expect(first.searchedBackTo).toEqual(
      (await db('messages').where('message_id', ids[4]).first<{ sort_at: Date }>('sort_at')).sort_at,
    );
    const second = await search(first.nextCursor!);
    expect(second.messages.map((r) => r.message_id)).toEqual([ids[3]]);
    const third = await search(second.nextCursor!);
    expect(third.messages.map((r) => r.message_id)).toEqual([ids[0]]);
    expect(third.nextCursor).toBeNull();
    expect(third.searchedBackTo).toBeNull();
  });
});

describe('the CSV export', () => {
  const download = async (cookie: string, query = '') =>
    fetch(`${stack.url}/api/messages.csv${query}`, { headers: { cookie } });

  it('streams the filtered log with its texts whole, spreadsheet-safe, and is recorded in the audit log', async () => {
    const { owner, companyId, ids } = await companyWithTexts('Export');
    const all = await download(owner.cookie);
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(all.headers.get('content-disposition')).toMatch(
      /^attachment; filename="messages-\d{4}-\d\d-\d\d\.csv"$/,
    );
    expect(all.headers.get('mds-export-row-limit')).toBe('100000');
    const bytes = new Uint8Array(await all.arrayBuffer());
    expect([...bytes.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const lines = new TextDecoder().decode(bytes).split('\n');
    expect(lines[0]).toBe(
      'event_id,accepted_at,state,messenger,bot_id,bot_name,phone,text,error_code,error,attempts,finished_at,webhook_status,webhook_attempts',
    );
    expect(lines.filter((l) => l !== '')).toHaveLength(1 + TEXTS.length);
    expect(lines[1]).toContain(`${ids[5]},`);
    expect(lines[1]).toContain(',Telegram,');
    expect(lines[1]).toContain(',79161234565,"Счёт оплачен, спасибо",');
    // The long text whole; a formula made harmless; the failure in words.
    expect(lines.find((l) => l.includes('Long'))).toContain('x'.repeat(300));
    const formula = lines.find((l) => l.includes('HYPERLINK'))!;
    expect(formula).toContain(`"'=HYPERLINK(""http://evil.example"",""click"")"`);
    expect(formula).toContain(',CLIENT_NOT_FOUND,Nobody with this number,');

    const russian = await (await download(owner.cookie, '?state=failed&lang=ru')).text();
    expect(russian.split('\n').filter((l) => l !== '')).toHaveLength(2);
    expect(russian).toContain(',CLIENT_NOT_FOUND,Нет клиента с этим номером,');
    const searched = await (await download(owner.cookie, `?text=${encodeURIComponent('ЗАКАЗ')}`)).text();
    expect(searched).toContain(ids[0]);
    expect(searched.split('\n').filter((l) => l !== '')).toHaveLength(2);

    const audit = await db('audit_log')
      .where({ company_id: companyId, action: 'messages.export' })
      .orderBy('id')
      .select<{ detail: unknown }[]>('detail');
    expect(audit.map((a) => a.detail)).toEqual([{}, { state: 'failed' }, { text: '(words)' }]);
  });

  it('refuses bad filters before anything is sent, and a visitor without a session', async () => {
    const { owner } = await companyWithOwner(stack, 'ExportBad');
    const bad = await download(owner.cookie, '?state=lost&lang=de');
    expect(bad.status).toBe(422);
    const problem = (await bad.json()) as { code: string; errors: { pointer: string }[] };
    expect(problem.code).toBe('validation_failed');
    expect(problem.errors.map((e) => e.pointer).sort()).toEqual(['#/lang', '#/state']);
    expect((await download('')).status).toBe(401);
  });

  it('stops at the row limit it states', async () => {
    const { companyId, ids } = await companyWithTexts('Limit');
    const batches: string[][] = [];
    for await (const batch of exportMessages(db, companyId, {}, { maxRows: 4, batch: 3 }))
      batches.push(batch.map((r) => r.message_id));
    expect(batches).toEqual([[ids[5], ids[4], ids[3]], [ids[2]]]);
  });
});
