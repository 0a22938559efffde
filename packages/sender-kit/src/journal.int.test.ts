import { randomUUID } from 'node:crypto';
import { migrateUp, openDatabase, type Knex } from '@mds/db';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJournal, journalMigrations } from './journal.js';

let db: Knex;
const schema = uniqueName('journal_test').toLowerCase();

beforeAll(async () => {
  db = await openDatabase({ url: testInfra().databaseUrl, schema });
  await migrateUp(db, schema, journalMigrations);
});

afterAll(async () => {
  await db?.raw('drop schema if exists ?? cascade', [schema]);
  await db?.destroy();
});

async function claimedDelivery(journal: ReturnType<typeof createJournal>): Promise<string> {
  const messageId = randomUUID();
  await journal.insert([
    {
      messageId,
      botId: 'bot-1',
      partition: 0,
      request: Buffer.from('request'),
      deliverBefore: new Date(Date.now() + 60_000),
    },
  ]);
  expect(await journal.claim(messageId)).toBe(1);
  return messageId;
}

describe('the delivery journal', () => {
  it('stores an outcome once: the same outcome again is a harmless retry, another one is refused', async () => {
    const journal = createJournal(db, `test/${randomUUID()}`);
    const messageId = await claimedDelivery(journal);
    const sent = { messageId, status: 'sent' as const, outcome: Buffer.from('sent at 12:00') };
    expect(await journal.settle(sent)).toBe(true);
    // A retry whose first answer was lost (the database restarted after the commit).
    expect(await journal.settle(sent)).toBe(true);
    expect(await journal.settle({ ...sent, outcome: Buffer.from('sent at 12:01') })).toBe(false);
    expect(await journal.settle({ messageId, status: 'failed', outcome: Buffer.from('sent at 12:00') })).toBe(
      false,
    );
    const [row] = await journal.unpublished([0]);
    expect(row).toMatchObject({ messageId, status: 'sent' });
    expect(Buffer.from(row!.outcome!).toString()).toBe('sent at 12:00');
  });

  it('refuses an outcome from a replica whose claim was taken over', async () => {
    const mine = createJournal(db, `test/${randomUUID()}`);
    const messageId = await claimedDelivery(mine);
    const abandoned = { messageId, status: 'failed' as const, outcome: Buffer.from('unconfirmed') };
    expect(await createJournal(db, 'another').settleAbandoned(abandoned, new Date(Date.now() + 1_000))).toBe(
      true,
    );
    expect(await mine.settle({ messageId, status: 'sent', outcome: Buffer.from('sent') })).toBe(false);
  });
});
