import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { stringify } from 'csv-stringify';
import type { Router } from 'express';
import { z } from 'zod';
import { explainError } from '@mds/contracts/error-catalogue';
import { messengerLabel } from '@mds/contracts';
import { parseOr422 } from '@mds/service-kit';
import { exportMessages, type ExportRow } from '../../adapters/db/message-log.js';
import type { ApiDeps } from './deps.js';
import { messageFilterOf, messageFilters, queryOf } from './message-query.js';
import { memberWith } from './session.js';

/** The most rows one export holds (newest first); a text search in an export looks through as many messages. */
export const EXPORT_ROW_LIMIT = 100_000;
const BATCH = 1_000;

const exportQuery = z.strictObject({ ...messageFilters, lang: z.enum(['en', 'ru']).default('en') });

/** The columns of an export, in order: the log's, with the text whole and each failure in words. */
function columnsOf(lang: 'en' | 'ru') {
  const iso = (d: Date | null) => d?.toISOString() ?? '';
  const columns: [string, (r: ExportRow) => string | number | null][] = [
    ['event_id', (r) => r.message_id],
    ['accepted_at', (r) => iso(r.accepted_at ?? r.sort_at)],
    ['state', (r) => r.state],
    ['messenger', (r) => (r.messenger ? messengerLabel(r.messenger) : '')],
    ['bot_id', (r) => r.bot_id],
    ['bot_name', (r) => r.bot_name],
    ['phone', (r) => r.phone],
    ['text', (r) => r.text],
    ['error_code', (r) => r.error_code],
    ['error', (r) => (r.error_code ? (explainError(r.error_code, lang)?.title ?? '') : '')],
    ['attempts', (r) => r.attempts],
    ['finished_at', (r) => iso(r.finished_at)],
    ['webhook_status', (r) => r.webhook_status],
    ['webhook_attempts', (r) => r.webhook_attempts],
  ];
  return columns;
}

/**
 * GET /messages.csv: the log under the page's filters as CSV, streamed as it is read (a batch at a time,
 * never the whole file in memory), newest first, at most EXPORT_ROW_LIMIT rows. Values a spreadsheet would
 * take for a formula are quoted harmless. Each export is recorded in the audit log: it carries numbers and texts.
 */
export function messageExportRoute(router: Router, d: ApiDeps): void {
  router.get('/messages.csv', async (req, res) => {
    const m = memberWith(res, 'read');
    const { lang, ...q } = parseOr422(exportQuery, queryOf(req));
    const filter = messageFilterOf(q);
    const columns = columnsOf(lang);
    await d.access.audit({
      companyId: m.company_id,
      memberId: m.member_id,
      action: 'messages.export',
      // The filters, except the searched words (they may be a person's).
      detail: { ...q, ...(q.text ? { text: '(words)' } : {}) },
    });
    const day = d.now().toISOString().slice(0, 10);
    res.setHeader('Content-Type', 'text/csv; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="messages-${day}.csv"`);
    res.setHeader('MDS-Export-Row-Limit', String(EXPORT_ROW_LIMIT));
    const rows = Readable.from(
      (async function* () {
        for await (const batch of exportMessages(d.db, m.company_id, filter, {
          maxRows: EXPORT_ROW_LIMIT,
          batch: BATCH,
        }))
          for (const row of batch) yield columns.map(([, value]) => value(row));
      })(),
    );
    // A byte order mark, so spreadsheets read the file as UTF-8 (Cyrillic texts and names).
    const csv = stringify({
      bom: true,
      escape_formulas: true,
      header: true,
      columns: columns.map(([n]) => n),
    });
    // Once the first bytes are out the status is sent: a failure later cuts the file short (the client sees an
    // aborted download) and goes on to the error handler, which logs it. A client that goes away stops the reading.
    try {
      await pipeline(rows, csv, res);
    } catch (error) {
      if (req.destroyed && !res.writableFinished) return;
      throw error;
    }
  });
}
