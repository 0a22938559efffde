/** A record a consumer group could not handle, set aside so that its partition goes on. */
export interface SetAsideRecord {
  /** The consumer group that set it aside. */
  group: string;
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  /** The record's bytes as they are in the log (re-publish them once a build handles them). */
  payload: Buffer | null;
  /**
   * Why, without any value from the record: `undecodable: ...`, or `refused: ` and the handler's error by its
   * class and code (a PostgreSQL error's SQLSTATE and the table and column it names).
   */
  reason: string;
}

/**
 * Where a consumer group puts the records it sets aside: the service's `dead_letters` table (`@mds/db`'s
 * `deadLetterTable`). Called before the partition moves past them, and retried until it succeeds.
 */
export interface DeadLetterSink {
  setAside(records: readonly SetAsideRecord[]): Promise<void>;
}

/**
 * For a group that keeps nothing of its own (a tool reading the log, a test's collector): what it sets aside
 * is logged and counted, and the partition goes on.
 */
export const NO_DEAD_LETTER_TABLE: DeadLetterSink = { setAside: () => Promise.resolve() };
