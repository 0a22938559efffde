import { randomUUID } from 'node:crypto';
import type { Knex } from '@mds/db';
import { migratedTestSchema, type TestSchema } from '@mds/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NewDelivery } from '../../application/ports.js';
import { createJournal, journalMigrations } from './journal.js';

let db: Knex;
let testSchema: TestSchema | undefined;

beforeAll(async () => {
  testSchema = await migratedTestSchema('journal_test', journalMigrations);
  db = testSchema.db;
});

afterAll(() => testSchema?.drop());

const HOUR = 3_600;

const delivery = (): NewDelivery => ({
  messageId: randomUUID(),
  botId: 'bot-1',
  partition: 0,
  request: Buffer.from('request'),
  deliverBefore: new Date(Date.now() + 60_000),
});

async function claimedDelivery(journal: ReturnType<typeof createJournal>): Promise<string> {
  const d = delivery();
  expect(await journal.claimNew(d)).toBe(1);
  return d.messageId;
}

describe('the delivery journal', () => {
  it('stores an outcome once: the same outcome again is a harmless retry, another one is refused', async () => {
    const journal = createJournal(db, `test/${randomUUID()}`, HOUR);
    const messageId = await claimedDelivery(journal);
    const sent = { messageId, status: 'sent' as const, outcome: Buffer.from('sent at 12:00') };
    expect(await journal.settle(sent)).toBe(true);
    // A retry whose first answer was lost (the database restarted after the commit).
    expect(await journal.settle(sent)).toBe(true);
    expect(await journal.settle({ ...sent, outcome: Buffer.from('sent at 12:01') })).toBe(false);
    expect(await journal.settle({ messageId, status: 'failed', outcome: Buffer.from('sent at 12:00') })).toBe(
      false,
    );
    const [row] = await journal.rowsOf([messageId]);
    expect(row).toMatchObject({ messageId, status: 'sent', spilled: false });
    expect(Buffer.from(row!.outcome!).toString()).toBe('sent at 12:00');
  });

  it('answers a claim of a message it holds already with its row', async () => {
    const journal = createJournal(db, `test/${randomUUID()}`, HOUR);
    const d = delivery();
    expect(await journal.claimNew(d)).toBe(1);
    expect(await createJournal(db, 'another', HOUR).claimNew(d)).toMatchObject({
      messageId: d.messageId,
      status: 'sending',
      claimAbandoned: false,
    });
  });

  it('lets exactly one of two concurrent claims of one message win', async () => {
    const journal = createJournal(db, `test/${randomUUID()}`, HOUR);
    const d = delivery();
    // Both in one group-committed statement (another claim holds the first), as two lanes left by a
    // revoke-and-reassign would make them.
    const [, ...answers] = await Promise.all([
      journal.claimNew(delivery()),
      journal.claimNew(d),
      journal.claimNew(d),
    ]);
    expect(answers.filter((a) => a === 1)).toHaveLength(1);
    expect(answers.filter((a) => a === undefined)).toHaveLength(1);
    expect(await journal.release({ messageId: d.messageId, notBefore: new Date(), failed: true })).toBe(true);
    const [, ...again] = await Promise.all([
      journal.claimNew(delivery()),
      journal.claimParked(d.messageId),
      journal.claimParked(d.messageId),
    ]);
    expect(again).toEqual([2, undefined]);
  });

  it('refuses an outcome from a replica whose claim was taken over', async () => {
    const mine = createJournal(db, `test/${randomUUID()}`, HOUR);
    const messageId = await claimedDelivery(mine);
    const abandoned = { messageId, status: 'failed' as const, outcome: Buffer.from('unconfirmed') };
    // Not abandoned yet by the database's clock: a claim lives for up to the window.
    expect(await createJournal(db, 'another', HOUR).settleAbandoned(abandoned)).toBe(false);
    expect(await createJournal(db, 'another', 0).settleAbandoned(abandoned)).toBe(true);
    expect(await mine.settle({ messageId, status: 'sent', outcome: Buffer.from('sent') })).toBe(false);
  });

  it('parks messages that must wait, and marks the publication of parked outcomes only', async () => {
    const journal = createJournal(db, `test/${randomUUID()}`, HOUR);
    const parked = delivery();
    const claimed = delivery();
    expect(await journal.claimNew(claimed)).toBe(1);
    // One of them had a row already: parking tells what it is.
    expect(await journal.park([parked, claimed])).toEqual([
      expect.objectContaining({ messageId: claimed.messageId, status: 'sending' }),
    ]);
    expect((await journal.openOfBot('bot-1', 0n, 10_000)).map((r) => r.messageId)).toEqual(
      expect.arrayContaining([parked.messageId, claimed.messageId]),
    );
    expect(await journal.claimParked(parked.messageId)).toBe(1);
    for (const d of [parked, claimed])
      expect(
        await journal.settle({ messageId: d.messageId, status: 'sent', outcome: Buffer.from('x') }),
      ).toBe(true);
    const unpublished = (await journal.unpublished([0])).map((r) => r.messageId);
    expect(unpublished).toContain(parked.messageId);
    expect(unpublished).not.toContain(claimed.messageId);
    await journal.markPublished(parked.messageId);
    expect((await journal.unpublished([0])).map((r) => r.messageId)).not.toContain(parked.messageId);
  });
});

describe('scheduled messages and cancels', () => {
  const partition = 7;
  const scheduled = (sendAt: Date): NewDelivery => ({ ...delivery(), partition, sendAt });

  it('holds a scheduled message out of the open work until it is promoted, with a seq after the rest', async () => {
    const journal = createJournal(db, `test/${randomUUID()}`, HOUR);
    const botId = `bot-${randomUUID()}`;
    const soon = { ...scheduled(new Date(Date.now() + 500)), botId };
    const later = { ...scheduled(new Date(Date.now() + 3_600_000)), botId };
    const parked = { ...delivery(), partition, botId };
    expect(await journal.park([soon, later, parked])).toEqual([]);
    expect((await journal.openOfBot(botId, 0n, 10)).map((r) => r.messageId)).toEqual([parked.messageId]);
    expect(await journal.botsWithOpenWork([partition])).toContain(botId);
    // Another partition's are not this replica's to promote.
    expect(await journal.promoteDue([partition + 1], new Date(Date.now() + 1_000))).toEqual([]);
    const promoted = [{ messageId: soon.messageId, botId, partition }];
    expect(await journal.promoteDue([partition], new Date(Date.now() + 1_000))).toEqual(promoted);
    // Promoted by a replica that lost the partition meanwhile: scheduled again, for the new owner to promote.
    await journal.unpromote([soon.messageId]);
    expect((await journal.openOfBot(botId, 0n, 10)).map((r) => r.messageId)).toEqual([parked.messageId]);
    expect(await journal.promoteDue([partition], new Date(Date.now() + 1_000))).toEqual(promoted);
    const open = await journal.openOfBot(botId, 0n, 10);
    expect(open.map((r) => r.messageId)).toEqual([parked.messageId, soon.messageId]);
    expect(open[1]).toMatchObject({ status: 'pending', notBefore: soon.sendAt });
    // A lane that read the parked one already reads the promoted one after it.
    expect((await journal.openOfBot(botId, open[0]!.seq, 10)).map((r) => r.messageId)).toEqual([
      soon.messageId,
    ]);
    expect(await journal.promoteDue([partition], new Date(Date.now() + 1_000))).toEqual([]);
    const [row] = await journal.rowsOf([later.messageId]);
    expect(row).toMatchObject({ status: 'scheduled', spilled: true });
  });

  it('cancels a message no call was claimed for, and nothing else: the first outcome wins', async () => {
    const journal = createJournal(db, `test/${randomUUID()}`, HOUR);
    const cancel = (messageId: string) => ({
      messageId,
      partition,
      request: Buffer.from('cancel'),
      outcome: Buffer.from('CANCELED'),
    });
    const inMemory = randomUUID();
    const waiting = scheduled(new Date(Date.now() + 3_600_000));
    const parked = delivery();
    await journal.park([waiting, parked]);
    const claimed = await claimedDelivery(journal);
    const retried = await claimedDelivery(journal);
    await journal.release({ messageId: retried, notBefore: new Date(), failed: true });
    const sent = await claimedDelivery(journal);
    await journal.settle({ messageId: sent, status: 'sent', outcome: Buffer.from('sent') });

    const all = [inMemory, waiting.messageId, parked.messageId, claimed, retried, sent];
    expect(new Set(await journal.cancel([...all, inMemory].map(cancel)))).toEqual(
      new Set([inMemory, waiting.messageId, parked.messageId]),
    );
    const rows = new Map((await journal.rowsOf(all)).map((r) => [r.messageId, r]));
    for (const id of [inMemory, waiting.messageId, parked.messageId])
      expect(rows.get(id)).toMatchObject({ status: 'failed', spilled: true, published: false });
    expect(rows.get(claimed)).toMatchObject({ status: 'sending' });
    expect(rows.get(retried)).toMatchObject({ status: 'pending', attempts: 1 });
    expect(rows.get(sent)).toMatchObject({ status: 'sent' });
    // A canceled message's lane finds the outcome at its claim, and makes no call.
    expect(await journal.claimNew({ ...delivery(), messageId: inMemory })).toMatchObject({
      status: 'failed',
    });
    expect(await journal.claimParked(parked.messageId)).toBeUndefined();
    // A second cancel changes nothing.
    expect(await journal.cancel([cancel(inMemory)])).toEqual([]);
    expect(await journal.unpublished([partition, 0])).toEqual(
      expect.arrayContaining([expect.objectContaining({ messageId: inMemory })]),
    );
  });
});
