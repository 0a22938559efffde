import { randomUUID } from 'node:crypto';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { createLogger } from '@mds/logging';
import { createRetention } from '@mds/personal-data';
import { API_REQUEST_LOG_DAYS, derivedEventId, newEvent, type ApiRequestEvent } from '@mds/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRequestRows } from '../../api/kafka/api-requests.js';
import { apiRequestsOf, storeApiRequests, type ApiRequestRow } from './api-requests-store.js';
import { keyUsage } from './queries.js';
import { migrations } from './migrations.js';

const DAY = 86_400_000;
let schema: TestSchema;

beforeAll(async () => {
  schema = await migratedTestSchema('dashboard_api_requests', migrations);
});
afterAll(() => schema?.drop());

const row = (companyId: string, keyId: string, at: Date, status = 202): ApiRequestRow => ({
  recordId: randomUUID(),
  companyId,
  keyId,
  at,
  operation: 'send',
  status,
  eventId: status < 400 ? randomUUID() : '',
  requestId: randomUUID(),
  durationMs: 7,
});

describe("a key's request log", () => {
  it('keeps each record once, pages newest first (many in one millisecond too), and moves "last used" forward only', async () => {
    const { db } = schema;
    const company = randomUUID();
    const base = Date.now() - 60_000;
    // 7 requests, three of them in the same millisecond; another key's and another company's apart.
    const rows = [0, 1, 2, 2, 2, 3, 4].map((ms) => row(company, 'keyaaaaaaaaa', new Date(base + ms)));
    const other = row(company, 'keybbbbbbbbb', new Date(base + 10));
    // Key ids are unique across companies: another company's key is another id.
    const stranger = row(randomUUID(), 'keyddddddddd', new Date(base + 20));
    await storeApiRequests(db, [...rows, other, stranger]);
    // The same records again (a batch that comes again): nothing changes.
    await storeApiRequests(db, rows.slice(0, 3));

    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await apiRequestsOf(db, {
        companyId: company,
        keyId: 'keyaaaaaaaaa',
        limit: 2,
        ...(cursor ? { cursor } : {}),
      });
      expect(page.requests.length).toBeLessThanOrEqual(2);
      seen.push(...page.requests.map((r) => r.request_id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const newestFirst = [...rows]
      .sort((a, b) => b.at.getTime() - a.at.getTime() || (a.recordId < b.recordId ? 1 : -1))
      .map((r) => r.requestId);
    expect(seen).toEqual(newestFirst);

    expect((await keyUsage(db, company)).get('keyaaaaaaaaa')).toEqual(new Date(base + 4));
    // An older record arriving late leaves "last used" where it is.
    await storeApiRequests(db, [row(company, 'keyaaaaaaaaa', new Date(base - 5_000))]);
    expect((await keyUsage(db, company)).get('keyaaaaaaaaa')).toEqual(new Date(base + 4));
  });

  it('shows a refused request with no event id, and is pruned after the documented days', async () => {
    const { db } = schema;
    const company = randomUUID();
    const fresh = row(company, 'keycccccccc0', new Date(), 422);
    const old = row(company, 'keycccccccc0', new Date(Date.now() - (API_REQUEST_LOG_DAYS + 1) * DAY));
    await storeApiRequests(db, [fresh, old]);
    const page = await apiRequestsOf(db, { companyId: company, keyId: fresh.keyId, limit: 10 });
    expect(page.requests[0]).toMatchObject({ status: 422, event_id: null, operation: 'send' });
    const retention = createRetention({
      db,
      logger: createLogger({ service: 'retention-test', level: 'silent' }),
      rules: [{ table: 'api_requests', column: 'at', days: API_REQUEST_LOG_DAYS }],
    });
    await retention.runOnce();
    const after = await apiRequestsOf(db, { companyId: company, keyId: fresh.keyId, limit: 10 });
    expect(after.requests.map((r) => r.request_id)).toEqual([fresh.requestId]);
  });

  it("takes the log's records as rows (one request, or a key's requests of a period), leaving out those that name no company or key", () => {
    const entry = (keyId: string, receivedAt?: Date) => ({
      keyId,
      operation: 'read_event',
      status: 404,
      subjectEventId: 'x',
      requestId: 'r',
      durationMs: 3,
      receivedAt,
    });
    const record = (
      companyId: string,
      event: NonNullable<ApiRequestEvent['event']>,
      eventId = randomUUID(),
    ) =>
      newEvent<ApiRequestEvent>({
        eventId,
        occurredAt: new Date('2026-11-29T10:00:00Z'),
        companyId,
        streamId: 'keyaaaaaaaaa',
        producer: 'gateway',
        event,
      });
    const company = randomUUID();
    const one = (keyId: string) => ({ $case: 'apiRequestServed' as const, value: entry(keyId) });
    expect(apiRequestRows(record(company, one('keyaaaaaaaaa')))).toEqual([
      expect.objectContaining({
        companyId: company,
        keyId: 'keyaaaaaaaaa',
        operation: 'read_event',
        status: 404,
        eventId: 'x',
      }),
    ]);
    expect(apiRequestRows(record('not-a-company', one('keyaaaaaaaaa')))).toEqual([]);
    expect(apiRequestRows(record(company, one('')))).toEqual([]);

    const later = new Date('2026-11-29T10:00:00.700Z');
    const batchId = randomUUID();
    const batch = record(
      company,
      {
        $case: 'apiRequestsServed',
        value: { requests: [entry('keyaaaaaaaaa'), entry('keyaaaaaaaaa', later)] },
      },
      batchId,
    );
    const rows = apiRequestRows(batch);
    // Each entry its own row, its id derived from the record's (a record read twice stores nothing twice), its time its own.
    expect(rows.map((r) => [r.recordId, r.at.toISOString()])).toEqual([
      [derivedEventId(batchId, 'request/0'), '2026-11-29T10:00:00.000Z'],
      [derivedEventId(batchId, 'request/1'), later.toISOString()],
    ]);
    expect(apiRequestRows(batch)).toEqual(rows);
  });
});
