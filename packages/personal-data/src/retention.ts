import type { Knex } from '@mds/db';
import type { Logger } from '@mds/logging';
import { Counter, Gauge, type Registry } from 'prom-client';

/** One table that grows for ever, and which of its rows may go. */
export interface RetentionRule {
  table: string;
  /** The timestamp column rows age by (an index on it, or leading a partial index, serves the deletes). */
  column: string;
  /** Rows older than this go; 0 or less keeps them for ever. */
  days: number;
  /** Only rows that are finished may go (pending deliveries, unpublished outbox rows stay), as SQL. */
  onlyWhere?: string;
}

export interface RetentionOptions {
  db: Knex;
  logger: Logger;
  registry?: Registry;
  rules: readonly RetentionRule[];
  /** Rows per delete statement: small, so no statement holds locks or bloats WAL for long. */
  batchSize?: number;
  now?: () => Date;
}

/**
 * Deletes old rows of each rule's table in small batches (`delete ... where ctid in (select ... limit n)`,
 * found through the column's index), one statement after another until a batch comes back short: every run
 * ends with nothing past its age (a backlog, after a long outage or a lowered setting, goes in one run however
 * large, a batch at a time). Logs and counts what it removed (mds_retention_deleted_rows_total{table}) and
 * when each table was last brought within its age (mds_retention_done_timestamp_seconds{table}): a run
 * that fails, or never ends, leaves that behind, and the chart's MdsRetentionBehind alert says so.
 */
export function createRetention(o: RetentionOptions) {
  const batchSize = o.batchSize ?? 1_000;
  const now = o.now ?? (() => new Date());
  const deleted = o.registry
    ? new Counter({
        name: 'mds_retention_deleted_rows_total',
        help: 'Rows deleted by the retention of their table',
        labelNames: ['table'],
        registers: [o.registry],
      })
    : undefined;
  const completed = o.registry
    ? new Gauge({
        name: 'mds_retention_done_timestamp_seconds',
        help: 'When the retention of the table last finished with no row left past its age (Unix time)',
        labelNames: ['table'],
        registers: [o.registry],
      })
    : undefined;

  async function applyRule(rule: RetentionRule): Promise<number> {
    if (rule.days <= 0) return 0;
    const before = new Date(now().getTime() - rule.days * 86_400_000);
    const extra = rule.onlyWhere ? ` and (${rule.onlyWhere})` : '';
    let total = 0;
    for (;;) {
      const result = await o.db.raw<{ rowCount: number }>(
        `delete from ?? where ctid in (select ctid from ?? where ?? < ?${extra} limit ?)`,
        [rule.table, rule.table, rule.column, before, batchSize],
      );
      total += result.rowCount;
      deleted?.inc({ table: rule.table }, result.rowCount);
      if (result.rowCount < batchSize) break;
    }
    completed?.set({ table: rule.table }, now().getTime() / 1000);
    return total;
  }

  return {
    /**
     * One pass over every rule; what each table lost. A table whose retention fails (its statement refused) is
     * logged and left for the next run; the others still run.
     */
    async runOnce(): Promise<Record<string, number>> {
      const removed: Record<string, number> = {};
      for (const rule of o.rules) {
        const began = Date.now();
        let count: number;
        try {
          count = await applyRule(rule);
        } catch (error) {
          o.logger.warn({ err: error, table: rule.table }, 'retention could not remove old rows');
          continue;
        }
        removed[rule.table] = (removed[rule.table] ?? 0) + count;
        if (count > 0) {
          o.logger.info(
            { table: rule.table, rows: count, olderThanDays: rule.days, ms: Date.now() - began },
            'retention removed old rows',
          );
        }
      }
      return removed;
    },
    /**
     * Runs every `intervalMs` (and once soon after start); a tick while a run goes on (a large backlog) is
     * skipped. Returns the stop function.
     */
    start(intervalMs: number): () => void {
      let running = false;
      const tick = () => {
        if (running) return;
        running = true;
        this.runOnce()
          .catch((error: unknown) => o.logger.warn({ err: error }, 'retention could not remove old rows'))
          .finally(() => (running = false));
      };
      const first = setTimeout(tick, Math.min(intervalMs, 30_000));
      const timer = setInterval(tick, intervalMs);
      first.unref();
      timer.unref();
      return () => {
        clearTimeout(first);
        clearInterval(timer);
      };
    },
  };
}

/** The rule of the `dead_letters` table every service with one keeps (@mds/db's deadLettersMigration). */
export function deadLettersRule(days: number): RetentionRule {
  return { table: 'dead_letters', column: 'quarantined_at', days };
}

/** A retention a week longer (for an index that must outlive the rows it points to); 0 stays for ever. */
export function outliving(days: number): number {
  return days > 0 ? days + 7 : 0;
}

export type Retention = ReturnType<typeof createRetention>;
