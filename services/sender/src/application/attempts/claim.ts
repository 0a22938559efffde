import type { Item, Lane } from '../lanes.js';
import type { StoredDelivery } from '../ports.js';
import { releaseAcks, type AttemptContext } from './context.js';

export type Claim = { kind: 'claimed'; attempts: number } | { kind: 'not-ours' };

/** What became of a message whose row was there already: decided, parked, or claimed by someone else. */
export function adoptRow(c: AttemptContext, lane: Lane, item: Item, row: StoredDelivery): void {
  if (row.status === 'sent' || row.status === 'failed') {
    c.outcomes.republish(row, item.acks.splice(0));
    c.forget(lane, item);
    return;
  }
  if (row.status === 'pending') {
    // Parked (by an owner before a rebalance, or given back for a retry): the journal holds it now.
    item.parked = true;
    item.seq = row.seq;
    item.failures = row.failures;
    item.notBeforeMs = row.notBefore?.getTime() ?? 0;
    releaseAcks(item);
    return;
  }
  // Claimed: by a process that may be gone, or by this one's lane of before a rebalance, still calling.
  item.orphan = true;
  item.notBeforeMs = row.claimAbandoned ? 0 : c.now() + c.orphanRecheckMs;
}

/** A claim of ours whose answer was lost: stored, with no call made for it. It is still ours to use. */
export const ourUnusedClaim = (c: AttemptContext, item: Item, row: StoredDelivery | undefined) =>
  item.claimUncertain === true && row?.status === 'sending' && row.claimedBy === c.instanceId;

/** Claims in the journal, noting when the database left it unknown whether the claim was stored. */
export async function claimIn<T>(item: Item, claimOnce: () => Promise<T>): Promise<T> {
  try {
    const answer = await claimOnce();
    return answer;
  } catch (error) {
    item.claimUncertain = true;
    throw error;
  }
}

export async function claim(c: AttemptContext, lane: Lane, item: Item): Promise<Claim> {
  if (item.parked) {
    const attempts = await claimIn(item, () => c.journal.claimParked(item.messageId));
    if (attempts !== undefined) return ((item.claimUncertain = false), { kind: 'claimed', attempts });
    const [row] = item.claimUncertain ? await c.journal.rowsOf([item.messageId]) : [];
    if (ourUnusedClaim(c, item, row))
      return ((item.claimUncertain = false), { kind: 'claimed', attempts: row!.attempts });
    c.claimLost(lane, item);
    return { kind: 'not-ours' };
  }
  const answer = await claimIn(item, () =>
    c.journal.claimNew({
      messageId: item.messageId,
      botId: lane.botId,
      partition: lane.partition,
      request: item.requestBytes,
      deliverBefore: new Date(item.deadlineMs),
    }),
  );
  if (typeof answer === 'number')
    return ((item.claimUncertain = false), { kind: 'claimed', attempts: answer });
  if (ourUnusedClaim(c, item, answer))
    return ((item.claimUncertain = false), { kind: 'claimed', attempts: answer!.attempts });
  if (answer) adoptRow(c, lane, item, answer);
  else {
    // Another replica wrote its row this very moment: see what became of it a little later.
    item.orphan = true;
    item.notBeforeMs = c.now() + c.orphanRecheckMs;
  }
  return { kind: 'not-ours' };
}
