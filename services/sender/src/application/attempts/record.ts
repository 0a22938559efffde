import { retryUntil } from '@mds/async';
import { topics } from '@mds/contracts';
import type { Due } from '../../domain/delivery.js';
import { outcomeEvent, unreachableEvent } from '../events.js';
import type { Item } from '../lanes.js';
import { apply, claimLife, factsOf, type AttemptContext } from './context.js';

/**
 * A journal write after the provider answered. Retried while the database is away (a restart, a
 * failover), until `giveUpAt`: the claim's longest life, after which another owner may take it over as
 * abandoned. Safe to repeat: the writes are compare-and-set on this replica's claim, and storing the same
 * outcome again is idempotent.
 */
export async function persist<T>(
  c: AttemptContext,
  item: Item,
  what: string,
  giveUpAt: number,
  write: () => Promise<T>,
): Promise<T> {
  return retryUntil(write, {
    initialMs: 250,
    maxMs: 5_000,
    shouldRetry: (_error, _attempt, waitMs) => !c.stopped.aborted && c.now() + waitMs <= giveUpAt,
    onRetry: (error) => c.logger.warn({ err: error, messageId: item.messageId }, `${what} failed; retrying`),
  });
}

/** The records of a decided outcome: its event, its side effect, and the journal's row update. */
function outcomeRecords(c: AttemptContext, item: Item, due: Extract<Due, { kind: 'store' }>) {
  const at = new Date(due.atMs);
  const { decided } = due;
  const outcome = outcomeEvent(item.request, decided, due.attempts, at, c.provider.producer, c.unconfirmed);
  const sideEffect =
    decided.kind === 'failed' && decided.unreachable
      ? unreachableEvent(item.request, decided.unreachable, at, c.provider.producer)
      : undefined;
  const settled = {
    messageId: item.messageId,
    status: decided.kind,
    outcome: Buffer.from(topics.message.codec.encode(outcome)),
    ...(sideEffect ? { sideEffect: Buffer.from(topics.botUpdate.codec.encode(sideEffect)) } : {}),
  };
  return { outcome, sideEffect, settled };
}

/**
 * Stores a decided outcome (compare-and-set on our claim, or on an abandoned claim of another), then
 * publishes it. If the database stays away past the claim's life, the write stays due and the message's
 * next turn tries again: whether this outcome or an abandoned claim's is stored first, the journal keeps one.
 */
async function store(c: AttemptContext, item: Item, due: Extract<Due, { kind: 'store' }>, giveUpAt: number) {
  const { outcome, sideEffect, settled } = outcomeRecords(c, item, due);
  const parked = item.state.parked;
  const stored = due.abandonedClaim
    ? await c.journal.settleAbandoned(settled)
    : await persist(c, item, 'storing an outcome', giveUpAt, () => c.journal.settle(settled));
  const [row] = stored ? [] : await c.journal.rowsOf([item.messageId]);
  const facts = { nowMs: c.now(), recheckMs: c.orphanRecheckMs };
  apply(
    c,
    item,
    { type: 'RecordWrite', written: stored, ...(row ? { row: factsOf(c, row) } : {}), ...facts },
    row,
  );
  if (!stored) return;
  const { decided } = due;
  // A channel that passed the message on to its next one (a fallback) decided no outcome of the message.
  const passedOn = outcome.event.$case === 'messageAttemptFailed';
  c.metrics.outcomes.inc({
    outcome: decided.kind === 'sent' ? 'sent' : passedOn ? 'passed_on' : decided.code,
  });
  if (due.abandonedClaim)
    c.logger.warn(
      { messageId: item.messageId, botId: item.botId },
      'an interrupted send was failed as unconfirmed',
    );
  c.outcomes.publish(item.messageId, item.botId, outcome, sideEffect, { parked, acks: item.acks.splice(0) });
}

/** Gives a claimed message back for a retry: parked from then on, its Kafka offsets let go of. */
async function giveBack(
  c: AttemptContext,
  item: Item,
  due: Extract<Due, { kind: 'give-back' }>,
  giveUpAt: number,
) {
  const released = await persist(c, item, 'giving a message back for a retry', giveUpAt, () =>
    c.journal.release({ messageId: item.messageId, notBefore: new Date(due.atMs), failed: due.failed }),
  );
  apply(c, item, { type: 'RecordWrite', written: released, nowMs: c.now(), recheckMs: c.orphanRecheckMs });
}

/** Does the journal write the message's decision left due; a turn the database interrupted finishes here. */
export function writeDue(c: AttemptContext, item: Item, giveUpAt = claimLife(c)): Promise<void> {
  const due = item.state.due!;
  return due.kind === 'store' ? store(c, item, due, giveUpAt) : giveBack(c, item, due, giveUpAt);
}
