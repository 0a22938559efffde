import type { Knex } from '@mds/db';
import type { ProjectedEvent } from '../../domain/projection.js';
import { json, UUID, minuteOf, ofKind, tally, type Of } from './fold.js';

/** A notification's row follows its latest event (events of one webhook-id come in order, on one partition). */
export async function applyWebhooks(trx: Knex.Transaction, events: readonly ProjectedEvent[]): Promise<void> {
  const attempts = ofKind(events, 'webhook-attempt');
  const finished = ofKind(events, 'webhook-finished');
  if (attempts.length > 0) {
    await trx.raw(
      `insert into webhook_deliveries as d (webhook_id, company_id, endpoint_id, subject_id, kind, status, attempts,
         last_status_code, last_error, url, last_attempt_at, next_attempt_at)
       select distinct on (webhook_id) webhook_id, company_id, endpoint_id, subject_id, kind, status, attempts,
         last_status_code, last_error, url, last_attempt_at, next_attempt_at
       from jsonb_to_recordset(?::jsonb) as v(seq int, webhook_id text, company_id uuid, endpoint_id text,
         subject_id text, kind text, status text, attempts int, last_status_code int, last_error text, url text,
         last_attempt_at timestamptz, next_attempt_at timestamptz)
       order by webhook_id, seq desc
       on conflict (webhook_id) do update set status = excluded.status, attempts = excluded.attempts,
         last_status_code = excluded.last_status_code, last_error = excluded.last_error, url = excluded.url,
         last_attempt_at = excluded.last_attempt_at, next_attempt_at = excluded.next_attempt_at
       where excluded.last_attempt_at >= d.last_attempt_at`,
      [
        json(
          attempts.map((e, seq) => ({
            seq,
            webhook_id: e.change.webhookId,
            company_id: e.companyId,
            endpoint_id: e.change.endpointId,
            subject_id: e.subjectId.toLowerCase(),
            kind: e.change.webhookKind,
            status:
              e.change.outcome === 'succeeded'
                ? 'delivered'
                : e.change.outcome === 'retryable'
                  ? 'pending'
                  : 'failed',
            attempts: e.change.attempt,
            last_status_code: e.change.statusCode || null,
            last_error: e.change.error || null,
            url: e.change.url,
            last_attempt_at: e.at,
            next_attempt_at: e.change.outcome === 'retryable' ? e.change.nextAttemptAt : null,
          })),
        ),
      ],
    );
    const byMinute = tally(attempts, (e) =>
      [e.companyId, minuteOf(e.at).toISOString(), e.change.endpointId, e.change.outcome].join('|'),
    );
    await trx.raw(
      `insert into webhook_minutes (company_id, minute, endpoint_id, outcome, count)
       select * from jsonb_to_recordset(?::jsonb)
         as v(company_id uuid, minute timestamptz, endpoint_id text, outcome text, count int)
       on conflict (company_id, minute, endpoint_id, outcome)
       do update set count = webhook_minutes.count + excluded.count`,
      [
        json(
          byMinute.map(([key, , count]) => {
            const [company_id, minute, endpoint_id, outcome] = key.split('|');
            return { company_id, minute, endpoint_id, outcome, count };
          }),
        ),
      ],
    );
    await recordEndpointFailures(trx, attempts);
  }
  if (finished.length > 0) {
    await trx.raw(
      `update webhook_deliveries d set status = v.status, next_attempt_at = null
       from jsonb_to_recordset(?::jsonb) as v(webhook_id text, status text, at timestamptz)
       where d.webhook_id = v.webhook_id and d.last_attempt_at <= v.at`,
      [
        json(
          finished.map((e) => ({
            webhook_id: e.change.webhookId,
            status: e.change.delivered ? 'delivered' : 'failed',
            at: e.at,
          })),
        ),
      ],
    );
  }
}

/** Each endpoint's latest failed attempt: its time only moves forward. */
async function recordEndpointFailures(
  trx: Knex.Transaction,
  attempts: readonly Of<'webhook-attempt'>[],
): Promise<void> {
  const latest = new Map<string, Of<'webhook-attempt'>>();
  for (const e of attempts) {
    if (e.change.outcome === 'succeeded') continue;
    const key = `${e.companyId}|${e.change.endpointId}`;
    const seen = latest.get(key);
    if (!seen || seen.at <= e.at) latest.set(key, e);
  }
  if (latest.size === 0) return;
  await trx.raw(
    `insert into webhook_endpoint_failures as f (company_id, endpoint_id, at, outcome, status_code, error)
     select * from jsonb_to_recordset(?::jsonb)
       as v(company_id uuid, endpoint_id text, at timestamptz, outcome text, status_code int, error text)
     on conflict (company_id, endpoint_id) do update set at = excluded.at, outcome = excluded.outcome,
       status_code = excluded.status_code, error = excluded.error
     where excluded.at >= f.at`,
    [
      json(
        [...latest.entries()]
          .sort(([a], [b]) => (a < b ? -1 : 1))
          .map(([, e]) => ({
            company_id: e.companyId,
            endpoint_id: e.change.endpointId,
            at: e.at,
            outcome: e.change.outcome,
            status_code: e.change.statusCode || null,
            error: e.change.error || null,
          })),
      ),
    ],
  );
}

/**
 * The message log shows each message's webhook at a glance, over all the endpoints it went to: failed if one
 * failed, pending if one will be tried again, else delivered; attempts summed. Worked out again from the rows
 * whenever either side changes (they come from different topics, so either may be read first).
 */
export async function linkWebhookStatus(
  trx: Knex.Transaction,
  events: readonly ProjectedEvent[],
): Promise<void> {
  const messageIds = new Set<string>();
  for (const e of events) {
    const c = e.change;
    const aboutWebhook =
      (c.kind === 'webhook-attempt' || c.kind === 'webhook-finished') && c.webhookKind === 'message.status';
    const aboutMessage = c.kind === 'accepted' || c.kind === 'routed' || c.kind === 'outcome';
    if ((aboutWebhook || aboutMessage) && UUID.test(e.subjectId)) messageIds.add(e.subjectId.toLowerCase());
  }
  if (messageIds.size === 0) return;
  await trx.raw(
    `update messages m set webhook_status = d.status, webhook_attempts = d.attempts
     from (select subject_id,
             case when bool_or(status = 'failed') then 'failed'
                  when bool_or(status = 'pending') then 'pending' else 'delivered' end as status,
             sum(attempts)::int as attempts
           from webhook_deliveries where subject_id = any(?) and kind = 'message.status'
           group by subject_id) d
     where m.message_id = d.subject_id::uuid
       and (m.webhook_status is distinct from d.status or m.webhook_attempts <> d.attempts)`,
    [[...messageIds]],
  );
}
