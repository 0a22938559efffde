import type { GiveBack, Outcome } from '../../application/ports.js';
import { firstOfEach, type Scope } from './rows.js';

export async function settleRows(s: Scope, outcomes: Outcome[]): Promise<boolean[]> {
  const { rows } = await s.db.raw<{ rows: { message_id: string }[] }>(
    `update deliveries d set status = v.status, outcome = v.outcome, side_effect = v.side_effect,
       finished_at = now(), claimed_by = null
     from unnest(?::uuid[], ?::text[], ?::bytea[], ?::bytea[]) as v(message_id, status, outcome, side_effect)
     where d.message_id = v.message_id
       and ((d.status = 'sending' and d.claimed_by = ?)
         -- the same outcome stored already: a retry whose first answer was lost (idempotent)
         or (d.status = v.status and d.outcome = v.outcome))
     returning d.message_id`,
    [
      outcomes.map((o) => o.messageId),
      outcomes.map((o) => o.status),
      outcomes.map((o) => o.outcome),
      outcomes.map((o) => o.sideEffect ?? null),
      s.instanceId,
    ] as never,
  );
  const done = new Set(rows.map((r) => r.message_id));
  return firstOfEach(
    outcomes,
    (o) => o.messageId,
    (o) => done.has(o.messageId),
    false,
  );
}

export async function releaseRows(s: Scope, items: GiveBack[]): Promise<boolean[]> {
  const { rows } = await s.db.raw<{ rows: { message_id: string }[] }>(
    `update deliveries d set status = 'pending', not_before = v.not_before, claimed_by = null, spilled = true,
       failures = d.failures + case when v.failed then 1 else 0 end
     from unnest(?::uuid[], ?::timestamptz[], ?::boolean[]) as v(message_id, not_before, failed)
     where d.message_id = v.message_id and d.status = 'sending' and d.claimed_by = ?
     returning d.message_id`,
    [items.map((i) => i.messageId), items.map((i) => i.notBefore), items.map((i) => i.failed), s.instanceId],
  );
  const done = new Set(rows.map((r) => r.message_id));
  return firstOfEach(
    items,
    (i) => i.messageId,
    (i) => done.has(i.messageId),
    false,
  );
}

export async function markPublishedRows(s: Scope, ids: string[]): Promise<void[]> {
  await s.db.raw(`update deliveries set published = true where message_id = any(?::uuid[])`, [ids]);
  return ids.map(() => undefined);
}

export async function settleAbandoned(s: Scope, outcome: Outcome): Promise<boolean> {
  const { rowCount } = await s.db.raw<{ rowCount: number | null }>(
    `update deliveries set status = ?, outcome = ?, side_effect = ?, finished_at = now(), claimed_by = null
     where message_id = ? and status = 'sending' and claimed_at < now() - make_interval(secs => ?)`,
    [outcome.status, outcome.outcome, outcome.sideEffect ?? null, outcome.messageId, s.abandonAfterSeconds],
  );
  return (rowCount ?? 0) > 0;
}
