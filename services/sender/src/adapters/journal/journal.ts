import type { Knex } from '@mds/db';
import type { RetentionRule } from '@mds/personal-data';
import type { GiveBack, Journal, NewDelivery, Outcome } from '../../application/ports.js';
import {
  cancelRows,
  claimNewRows,
  claimParkedRows,
  decideAtOnce,
  park,
  promoteDue,
  unpromote,
} from './claims.js';
import { markPublishedRows, releaseRows, settleAbandoned, settleRows } from './decisions.js';
import { groupCommit } from './group-commit.js';
import { botsWithOpenWork, openOfBot, rowsOf, unpublished } from './reads.js';
import type { Scope } from './rows.js';

export { journalMigrations } from './migrations.js';

/**
 * The journal's statements; the per-message ones are group-committed (calls made while one is in flight
 * share the next statement). `abandonAfterSeconds` is the longest a live claim can last (calls, and the
 * retries of storing their outcome): a claim older than that, by the database's clock, was abandoned.
 */
export function createJournal(db: Knex, instanceId: string, abandonAfterSeconds: number): Journal {
  const s: Scope = { db, instanceId, abandonAfterSeconds };
  return {
    instanceId,
    claimNew: groupCommit((items: NewDelivery[]) => claimNewRows(s, items)),
    claimParked: groupCommit((ids: string[]) => claimParkedRows(s, ids)),
    settle: groupCommit((outcomes: Outcome[]) => settleRows(s, outcomes)),
    release: groupCommit((items: GiveBack[]) => releaseRows(s, items)),
    markPublished: groupCommit((ids: string[]) => markPublishedRows(s, ids)),
    park: (deliveries: NewDelivery[]) => park(s, deliveries),
    promoteDue: (partitions, until) => promoteDue(s, partitions, until),
    unpromote: (messageIds) => unpromote(s, messageIds),
    cancel: (items) => cancelRows(s, items),
    decideAtOnce: (items: (NewDelivery & { outcome: Buffer })[]) => decideAtOnce(s, items),
    rowsOf: (messageIds: readonly string[]) => rowsOf(s, messageIds),
    openOfBot: (botId: string, afterSeq: bigint, limit: number) => openOfBot(s, botId, afterSeq, limit),
    botsWithOpenWork: (partitions: readonly number[]) => botsWithOpenWork(s, partitions),
    unpublished: (partitions: readonly number[]) => unpublished(s, partitions),
    settleAbandoned: (outcome: Outcome) => settleAbandoned(s, outcome),
    async cursor(botId: string): Promise<string | undefined> {
      const row = await db<{ cursor: string }>('update_cursors').where('bot_id', botId).first('cursor');
      return row?.cursor;
    },
    async saveCursor(botId: string, cursor: string): Promise<void> {
      await db('update_cursors')
        .insert({ bot_id: botId, cursor, updated_at: new Date() })
        .onConflict('bot_id')
        .merge();
    },
  };
}

/** Finished deliveries older than `days` go (a parked one once its outcome is published); open work stays. */
export function journalRetentionRule(days: number): RetentionRule {
  return { table: 'deliveries', column: 'finished_at', days, onlyWhere: 'published or not spilled' };
}
