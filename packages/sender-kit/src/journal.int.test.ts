import { randomUUID } from 'node:crypto';
import type { Knex } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJournal, journalMigrations } from './journal.js';

let db: Knex;
let testSchema: TestSchema | undefined;

beforeAll(async () => {
  testSchema = await migratedTestSchema('journal_test', journalMigrations);
  db = testSchema.db;
});

afterAll(() => testSchema?.drop());

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
