import type { DeliveryStatus, StoredDelivery } from '../../application/ports.js';
import type { Knex } from '@mds/db';

export interface Row {
  message_id: string;
  seq: string;
  bot_id: string;
  kafka_partition: number;
  request: Buffer;
  deliver_before: Date;
  status: DeliveryStatus;
  attempts: number;
  failures: number;
  not_before: Date | null;
  claimed_by: string | null;
  claim_abandoned: boolean;
  outcome: Buffer | null;
  side_effect: Buffer | null;
  spilled: boolean;
  published: boolean;
}

/** The columns of a StoredDelivery (of the table aliased `prefix`); `?` is the abandon window in seconds. */
export const columns = (p = '') =>
  `${p}message_id, ${p}seq, ${p}bot_id, ${p}kafka_partition, ${p}request, ${p}deliver_before, ${p}status,
   ${p}attempts, ${p}failures, ${p}not_before, ${p}claimed_by,
   coalesce(${p}claimed_at < now() - make_interval(secs => ?), false) as claim_abandoned,
   ${p}outcome, ${p}side_effect, ${p}spilled, ${p}published`;

export const COLUMNS = columns();

export function fromRow(r: Row): StoredDelivery {
  return {
    messageId: r.message_id,
    seq: BigInt(r.seq),
    botId: r.bot_id,
    partition: r.kafka_partition,
    request: r.request,
    deliverBefore: r.deliver_before,
    status: r.status,
    attempts: r.attempts,
    failures: r.failures,
    notBefore: r.not_before,
    claimedBy: r.claimed_by,
    claimAbandoned: r.claim_abandoned,
    outcome: r.outcome,
    sideEffect: r.side_effect,
    spilled: r.spilled,
    published: r.published,
  };
}

/**
 * Answers items in their order, each id once: a second caller for an id already in the same batch is
 * answered `lost` (two callers of one message never both win: one of them is a lane left over from a
 * rebalance).
 */
export function firstOfEach<T, R>(
  items: T[],
  idOf: (item: T) => string,
  answer: (item: T) => R,
  lost: R,
): R[] {
  const seen = new Set<string>();
  return items.map((item) => {
    const id = idOf(item);
    if (seen.has(id)) return lost;
    seen.add(id);
    return answer(item);
  });
}

/** What every statement needs: the database, this replica's name on its claims, the abandon window. */
export interface Scope {
  db: Knex;
  instanceId: string;
  /** The longest a live claim can last (calls, and the retries of storing their outcome). */
  abandonAfterSeconds: number;
}
