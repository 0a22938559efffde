import type { Lane, Item } from '../lanes.js';
import type { StoredDelivery } from '../ports.js';
import { apply, factsOf, type AttemptContext } from './context.js';

/** Asks the journal for the claim, noting when the database left it unknown whether the claim was stored. */
async function ask<T>(c: AttemptContext, item: Item, claimOnce: () => Promise<T>): Promise<T> {
  try {
    return await claimOnce();
  } catch (error) {
    apply(c, item, { type: 'NoteClaimUnanswered' });
    throw error;
  }
}

/** What the journal answers to a claim of a parked message: the attempt, or (if ours may be stored) its row. */
async function claimParked(c: AttemptContext, item: Item): Promise<number | StoredDelivery | undefined> {
  const attempts = await ask(c, item, () => c.journal.claimParked(item.messageId));
  if (attempts !== undefined || !item.state.claimUncertain) return attempts;
  const [row] = await c.journal.rowsOf([item.messageId]);
  return row;
}

/** Claims the message for one call in the journal; true if it is ours now (see decideClaim for the rest). */
export async function claim(c: AttemptContext, lane: Lane, item: Item): Promise<boolean> {
  const answer = item.state.parked
    ? await claimParked(c, item)
    : await ask(c, item, () =>
        c.journal.claimNew({
          messageId: item.messageId,
          botId: lane.botId,
          partition: lane.partition,
          request: item.requestBytes,
          deliverBefore: new Date(item.state.deadlineMs),
        }),
      );
  const row = typeof answer === 'object' ? answer : undefined;
  apply(
    c,
    item,
    {
      type: 'RecordClaim',
      answer:
        typeof answer === 'number'
          ? { kind: 'claimed', attempts: answer }
          : row
            ? { kind: 'row', row: factsOf(c, row) }
            : { kind: 'none' },
      nowMs: c.now(),
      recheckMs: c.orphanRecheckMs,
    },
    row,
  );
  return item.state.status === 'claimed';
}
