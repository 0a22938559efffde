import type { Knex } from '@mds/db';
import type { Logger } from '@mds/logging';
import { Counter, type Registry } from 'prom-client';

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
  /** At most this many batches per table per run (the rest waits for the next run). */
  maxBatchesPerRun?: number;
  now?: () => Date;
}

/**
 * Deletes old rows of each rule's table in small batches (`delete ... where ctid in (select ... limit n)`,
 * found through the column's index) until a batch comes back short or the run's bound is reached. Logs and
 * counts what it removed (mds_retention_deleted_rows_total{table}).
 */
export function createRetention(o: RetentionOptions) {
  const batchSize = o.batchSize ?? 1_000;
  const maxBatches = o.maxBatchesPerRun ?? 100;
  const now = o.now ?? (() => new Date());
  const deleted = o.registry
    ? new Counter({
        name: 'mds_retention_deleted_rows_total',
        help: 'Rows deleted by the retention of their table',
        labelNames: ['table'],
        registers: [o.registry],
      })
    : undefined;

  async function applyRule(rule: RetentionRule): Promise<number> {
    if (rule.days <= 0) return 0;
    const before = new Date(now().getTime() - rule.days * 86_400_000);
    const extra = rule.onlyWhere ? ` and (${rule.onlyWhere})` : '';
    let total = 0;
    for (let i = 0; i < maxBatches; i += 1) {
      const result = await o.db.raw<{ rowCount: number }>(
        `delete from ?? where ctid in (select ctid from ?? where ?? < ?${extra} limit ?)`,
        [rule.table, rule.table, rule.column, before, batchSize],
      );
      total += result.rowCount;
      if (result.rowCount < batchSize) break;
    }
    return total;
  }

  return {
    /** One pass over every rule; what each table lost. */
    async runOnce(): Promise<Record<string, number>> {
      const removed: Record<string, number> = {};
      for (const rule of o.rules) {
        const count = await applyRule(rule);
        removed[rule.table] = (removed[rule.table] ?? 0) + count;
        if (count > 0) {
          deleted?.inc({ table: rule.table }, count);
          o.logger.info(
            { table: rule.table, rows: count, olderThanDays: rule.days },
            'retention removed old rows',
          );
        }
      }
      return removed;
    },
    /** Runs every `intervalMs` (and once soon after start); returns the stop function. */
    start(intervalMs: number): () => void {
      let running: Promise<unknown> = Promise.resolve();
      const tick = () => {
        running = running
          .then(() => this.runOnce())
          .catch((error: unknown) => o.logger.warn({ err: error }, 'retention could not remove old rows'));
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

/** A retention a week longer (for an index that must outlive the rows it points to); 0 stays for ever. */
export function outliving(days: number): number {
  return days > 0 ? days + 7 : 0;
}

export type Retention = ReturnType<typeof createRetention>;
