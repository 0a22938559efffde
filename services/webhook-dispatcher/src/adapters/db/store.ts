import { randomUUID } from 'node:crypto';
import type { Knex } from '@mds/db';
import type { OutgoingEvent } from '@mds/kafka';
import { appendToOutbox } from './outbox.js';

export interface NewDelivery {
  webhookId: string;
  sourceEventId: string;
  companyId: string;
  kind: string;
  subjectId: string;
  body: string;
  createdAt: Date;
}

/** A due delivery this worker holds the lease of. */
export interface ClaimedDelivery {
  webhookId: string;
  leaseId: string;
  sourceEventId: string;
  companyId: string;
  kind: string;
  subjectId: string;
  body: string;
  /** Attempts made before this one. */
  attempts: number;
  manual: boolean;
}

export interface AttemptRow {
  webhookId: string;
  attempt: number;
  trigger: 'scheduled' | 'manual';
  url: string;
  statusCode: number;
  latencyMs: number;
  outcome: string;
  error: string | null;
  responseExcerpt: string;
  nextAttemptAt: Date | null;
  attemptedAt: Date;
}

/** The result of one claimed delivery: the row's new state, its attempt (none when deferred), its events. */
export interface Completion {
  claim: ClaimedDelivery;
  update: {
    status: 'pending' | 'delivered' | 'failed';
    attempts: number;
    nextAttemptAt: Date | null;
    lastStatusCode: number | null;
    lastError: string | null;
    finishedAt: Date | null;
  };
  attempt?: AttemptRow;
  events: OutgoingEvent[];
  /** Whether this attempt reached the endpoint and how it went (for the failure clock); absent if it did not. */
  health?: { succeeded: boolean; at: Date };
}

export interface DeliveryView {
  webhook_id: string;
  source_event_id: string;
  company_id: string;
  kind: string;
  subject_id: string;
  status: string;
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
  body: string;
}

export function createDeliveryStore(db: Knex) {
  return {
    /** Stores new deliveries; ones whose source event is already stored are dropped. Returns how many are new. */
    async ingest(deliveries: NewDelivery[]): Promise<number> {
      if (deliveries.length === 0) return 0;
      const rows = await db('deliveries')
        .insert(
          deliveries.map((d) => ({
            webhook_id: d.webhookId,
            source_event_id: d.sourceEventId,
            company_id: d.companyId,
            kind: d.kind,
            subject_id: d.subjectId,
            body: d.body,
            status: 'pending',
            next_attempt_at: d.createdAt,
            created_at: d.createdAt,
          })),
        )
        .onConflict('source_event_id')
        .ignore()
        .returning('webhook_id');
      return rows.length;
    },

    /**
     * Takes up to `limit` due deliveries: rows locked by another worker's claim are skipped, rows leased by
     * another worker are skipped until the lease (database time) runs out. `slots` says how many more each
     * company may take (companies absent from it may take `defaultSlots`).
     */
    async claim(o: {
      now: Date;
      limit: number;
      leaseSeconds: number;
      fullCompanies: string[];
      freeSlots: (companyId: string) => number;
      /** Slots of a company with nothing in flight here. */
      defaultSlots: number;
      /** Companies with something in flight here. */
      busyCompanies: string[];
    }): Promise<ClaimedDelivery[]> {
      // One statement, one round trip: lock due rows (skipping rows other claims hold), keep at most the free
      // slots of each company, lease those. Locked rows not kept are free again when the statement ends.
      const slots = o.busyCompanies.map((c) => ({ company_id: c, free: o.freeSlots(c) }));
      const leaseId = randomUUID();
      const result = await db.raw<{
        rows: {
          webhook_id: string;
          source_event_id: string;
          company_id: string;
          kind: string;
          subject_id: string;
          body: string;
          attempts: number;
          manual: boolean;
          next_attempt_at: Date;
        }[];
      }>(
        `with candidates as (
           select webhook_id, company_id, next_attempt_at from deliveries
           where status = 'pending' and next_attempt_at <= ?
             and (lease_until is null or lease_until < clock_timestamp())
             and company_id <> all(select jsonb_array_elements_text(?::jsonb))
           order by next_attempt_at
           limit ?
           for update skip locked
         ), ranked as (
           select c.webhook_id, c.company_id,
                  row_number() over (partition by c.company_id order by c.next_attempt_at) as rank
           from candidates c
         ), chosen as (
           select r.webhook_id from ranked r
           left join jsonb_to_recordset(?::jsonb) as s(company_id text, free int) on s.company_id = r.company_id
           where r.rank <= coalesce(s.free, ?)
         )
         update deliveries d set lease_id = ?, lease_until = clock_timestamp() + make_interval(secs => ?)
         from chosen where d.webhook_id = chosen.webhook_id
         returning d.webhook_id, d.source_event_id, d.company_id, d.kind, d.subject_id, d.body, d.attempts,
                   d.manual, d.next_attempt_at`,
        [
          o.now,
          JSON.stringify(o.fullCompanies),
          o.limit,
          JSON.stringify(slots),
          o.defaultSlots,
          leaseId,
          o.leaseSeconds,
        ],
      );
      return result.rows
        .sort((a, b) => a.next_attempt_at.getTime() - b.next_attempt_at.getTime())
        .map((r) => ({
          webhookId: r.webhook_id,
          leaseId,
          sourceEventId: r.source_event_id,
          companyId: r.company_id,
          kind: r.kind,
          subjectId: r.subject_id,
          body: r.body,
          attempts: r.attempts,
          manual: r.manual,
        }));
    },

    /**
     * Stores the results of claimed deliveries in one transaction: each row only if its lease is still this
     * worker's, its attempt, its events (outbox) and the failure clocks. Returns the failure clock of every
     * company whose attempts failed here.
     */
    async complete(
      completions: Completion[],
    ): Promise<{ stored: Completion[]; failingSince: Map<string, Date> }> {
      if (completions.length === 0) return { stored: [], failingSince: new Map() };
      return db.transaction(async (trx) => {
        const values = completions.map((c) => ({
          webhook_id: c.claim.webhookId,
          lease_id: c.claim.leaseId,
          status: c.update.status,
          attempts: c.update.attempts,
          next_attempt_at: c.update.nextAttemptAt?.toISOString() ?? null,
          last_status_code: c.update.lastStatusCode,
          last_error: c.update.lastError,
          finished_at: c.update.finishedAt?.toISOString() ?? null,
          manual: c.update.status === 'pending' ? c.claim.manual && !c.attempt : false,
        }));
        const updated = await trx.raw<{ rows: { webhook_id: string }[] }>(
          `update deliveries d set status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
             last_status_code = coalesce(v.last_status_code, d.last_status_code),
             last_error = coalesce(v.last_error, d.last_error), finished_at = v.finished_at, manual = v.manual,
             lease_id = null, lease_until = null
           from jsonb_to_recordset(?::jsonb) as v(webhook_id text, lease_id uuid, status text, attempts int,
             next_attempt_at timestamptz, last_status_code int, last_error text, finished_at timestamptz, manual boolean)
           where d.webhook_id = v.webhook_id and d.lease_id = v.lease_id
           returning d.webhook_id`,
          [JSON.stringify(values)],
        );
        const kept = new Set(updated.rows.map((r) => r.webhook_id));
        const stored = completions.filter((c) => kept.has(c.claim.webhookId));
        const attempts = stored.flatMap((c) => (c.attempt ? [c.attempt] : []));
        if (attempts.length > 0) {
          await trx('attempts').insert(
            attempts.map((a) => ({
              webhook_id: a.webhookId,
              attempt: a.attempt,
              trigger: a.trigger,
              url: a.url,
              status_code: a.statusCode,
              latency_ms: a.latencyMs,
              outcome: a.outcome,
              error: a.error,
              response_excerpt: a.responseExcerpt,
              next_attempt_at: a.nextAttemptAt,
              attempted_at: a.attemptedAt,
            })),
          );
        }
        await appendToOutbox(
          trx,
          stored.flatMap((c) => c.events),
        );
        // The failure clock of each company, from this batch's results in order.
        const clocks = new Map<string, { reset: boolean; failingSince: Date | null; at: Date }>();
        for (const c of stored) {
          if (!c.health) continue;
          const clock = clocks.get(c.claim.companyId) ?? {
            reset: false,
            failingSince: null,
            at: c.health.at,
          };
          if (c.health.succeeded)
            clocks.set(c.claim.companyId, { reset: true, failingSince: null, at: c.health.at });
          else
            clocks.set(c.claim.companyId, {
              ...clock,
              failingSince: clock.failingSince ?? c.health.at,
              at: c.health.at,
            });
        }
        const failingSince = new Map<string, Date>();
        if (clocks.size > 0) {
          const existing = await trx('endpoint_health')
            .whereIn('company_id', [...clocks.keys()])
            .forUpdate()
            .select<{ company_id: string; failing_since: Date | null }[]>('company_id', 'failing_since');
          const before = new Map(existing.map((r) => [r.company_id, r.failing_since]));
          const rows = [...clocks].map(([companyId, c]) => {
            const since = c.reset ? c.failingSince : (before.get(companyId) ?? c.failingSince);
            if (since) failingSince.set(companyId, since);
            return { company_id: companyId, failing_since: since, updated_at: c.at };
          });
          await trx('endpoint_health').insert(rows).onConflict('company_id').merge();
        }
        return { stored, failingSince };
      });
    },

    /** Deliveries by webhook id (msg_...) or by the public event_id they are about, with their attempts. */
    async find(id: string): Promise<(DeliveryView & { attempt_log: Record<string, unknown>[] })[]> {
      // One snapshot for both reads: a delivery and its attempt log always agree.
      return db.transaction(
        async (trx) => {
          const deliveries = await trx('deliveries')
            .where(id.startsWith('msg_') ? { webhook_id: id } : { subject_id: id })
            .orderBy('created_at')
            .select<DeliveryView[]>();
          if (deliveries.length === 0) return [];
          const attempts = await trx('attempts')
            .whereIn(
              'webhook_id',
              deliveries.map((d) => d.webhook_id),
            )
            .orderBy('id')
            .select<(Record<string, unknown> & { webhook_id: string; id: string })[]>();
          return deliveries.map((d) => ({
            ...d,
            attempt_log: attempts
              .filter((a) => a.webhook_id === d.webhook_id)
              .map(({ id: _id, webhook_id: _w, ...a }) => a),
          }));
        },
        { isolationLevel: 'repeatable read', readOnly: true },
      );
    },

    /** Tries one delivery again now; one that had finished gets one manual attempt. */
    async resend(webhookId: string, now: Date): Promise<boolean> {
      const rows = await db('deliveries')
        .where({ webhook_id: webhookId })
        .update({
          manual: db.raw(`status <> 'pending'`),
          status: 'pending',
          next_attempt_at: now,
          finished_at: null,
        })
        .returning('webhook_id');
      return rows.length > 0;
    },

    /** Every failed delivery of a company created in [since, until] gets one manual attempt now. */
    async recover(companyId: string, since: Date, until: Date, now: Date): Promise<number> {
      const rows = await db('deliveries')
        .where({ company_id: companyId, status: 'failed' })
        .andWhere('created_at', '>=', since)
        .andWhere('created_at', '<=', until)
        .update({ status: 'pending', manual: true, next_attempt_at: now, finished_at: null })
        .returning('webhook_id');
      return rows.length;
    },

    /** When the longest-waiting due delivery (pending, next_attempt_at <= now) was due; null if none is. */
    async oldestDue(now: Date): Promise<Date | null> {
      const row = await db('deliveries')
        .where({ status: 'pending' })
        .andWhere('next_attempt_at', '<=', now)
        .min<{ due: Date | null }>('next_attempt_at as due')
        .first();
      return row?.due ?? null;
    },
  };
}

export type DeliveryStore = ReturnType<typeof createDeliveryStore>;
