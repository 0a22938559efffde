import { retryUntil } from '@mds/async';
import { topics } from '@mds/contracts';
import { outcomeEvent, unreachableEvent, type Decided } from '../events.js';
import type { Item, Lane } from '../lanes.js';
import type { Journal } from '../ports.js';
import { adoptRow } from './claim.js';
import { claimLife, releaseAcks, type AttemptContext } from './context.js';

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
    shouldRetry: (_error, _attempt, waitMs) => !c.stopping() && c.now() + waitMs <= giveUpAt,
    onRetry: (error) => c.logger.warn({ err: error, messageId: item.messageId }, `${what} failed; retrying`),
  });
}

/** Stores the outcome (compare-and-set on our claim), then publishes it. */
export async function decide(
  c: AttemptContext,
  lane: Lane,
  item: Item,
  attempts: number,
  decided: Decided,
  giveUpAt: number,
): Promise<void> {
  const at = new Date(c.now());
  const outcome = outcomeEvent(item.request, decided, attempts, at, c.provider.producer);
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
  await storeOutcome(c, lane, item, settled, outcome, sideEffect, decided, giveUpAt);
}

/**
 * Stores a decided outcome (compare-and-set on our claim) and publishes it. If the database stays away
 * past the claim's life, what is left is kept with the message, and its next turn tries again: whether
 * this outcome or an abandoned claim's is stored first, the journal keeps one.
 */
export async function storeOutcome(
  c: AttemptContext,
  lane: Lane,
  item: Item,
  settled: Parameters<Journal['settle']>[0],
  outcome: ReturnType<typeof outcomeEvent>,
  sideEffect: ReturnType<typeof unreachableEvent> | undefined,
  decided: Decided,
  giveUpAt: number,
): Promise<void> {
  let stored: boolean;
  try {
    stored = await persist(c, item, 'storing an outcome', giveUpAt, () => c.journal.settle(settled));
  } catch (error) {
    item.resume = () => storeOutcome(c, lane, item, settled, outcome, sideEffect, decided, claimLife(c));
    throw error;
  }
  if (!stored) {
    // Another owner decided it (it took our claim over as abandoned): its outcome is the one.
    const [row] = await c.journal.rowsOf([item.messageId]);
    if (row) adoptRow(c, lane, item, row);
    else c.forget(lane, item);
    return;
  }
  c.forget(lane, item);
  c.metrics.outcomes.inc({ outcome: decided.kind === 'sent' ? 'sent' : decided.code });
  c.outcomes.publish(item.messageId, lane.botId, outcome, sideEffect, {
    parked: item.parked,
    acks: item.acks.splice(0),
  });
}

export function pastDeadline(item: Item): Decided {
  if (item.failures > 0)
    return {
      kind: 'failed',
      code: 'PROVIDER_ERROR',
      description: `the messenger kept failing until the delivery deadline${item.lastError ? `; last error: ${item.lastError}` : ''}`,
    };
  if (item.lastError)
    return {
      kind: 'failed',
      code: 'PROVIDER_ERROR',
      description: `the bot's credentials could not be read until the delivery deadline; last error: ${item.lastError}`,
    };
  return {
    kind: 'failed',
    code: 'RATE_LIMITED_PAST_DEADLINE',
    description: 'the message waited for its turn past its delivery deadline',
  };
}

/** Gives a claimed message back for a retry at `atMs`: parked from then on, its Kafka offsets let go of. */
export async function giveBack(
  c: AttemptContext,
  lane: Lane,
  item: Item,
  atMs: number,
  failed: boolean,
  giveUpAt: number,
): Promise<void> {
  let released: boolean;
  try {
    released = await persist(c, item, 'giving a message back for a retry', giveUpAt, () =>
      c.journal.release({ messageId: item.messageId, notBefore: new Date(atMs), failed }),
    );
  } catch (error) {
    item.resume = () => giveBack(c, lane, item, atMs, failed, claimLife(c));
    throw error;
  }
  if (!released) return c.forget(lane, item);
  // Parked from now on: its row keeps it, so its Kafka offset may move on.
  item.parked = true;
  releaseAcks(item);
  item.notBeforeMs = atMs;
}

/** A claim found without an outcome: once it is surely abandoned, the documented rule decides it. */
export async function settleOrphan(c: AttemptContext, lane: Lane, item: Item): Promise<void> {
  const at = new Date(c.now());
  const outcome = outcomeEvent(
    item.request,
    {
      kind: 'failed',
      code: 'DELIVERY_UNCONFIRMED',
      description:
        'the sender stopped while the messenger was handling this message; it may have reached the person and is not sent again, to avoid a duplicate',
    },
    0,
    at,
    c.provider.producer,
  );
  const settled = await c.journal.settleAbandoned({
    messageId: item.messageId,
    status: 'failed',
    outcome: Buffer.from(topics.message.codec.encode(outcome)),
  });
  if (settled) {
    c.forget(lane, item);
    c.metrics.outcomes.inc({ outcome: 'DELIVERY_UNCONFIRMED' });
    c.logger.warn(
      { messageId: item.messageId, botId: lane.botId },
      'an interrupted send was failed as unconfirmed',
    );
    c.outcomes.publish(item.messageId, lane.botId, outcome, undefined, {
      parked: item.parked,
      acks: item.acks.splice(0),
    });
    return;
  }
  // Decided or given back meanwhile, or its claim is not that old yet: the journal says which.
  const [row] = await c.journal.rowsOf([item.messageId]);
  if (!row) return c.forget(lane, item);
  item.orphan = false;
  adoptRow(c, lane, item, row);
}
