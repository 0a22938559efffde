import { randomUUID } from 'node:crypto';
import type { Knex } from '@mds/db';
import type { OutgoingEvent } from '@mds/kafka';

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

/** Rows a claim reads per delivery it wants, at most MAX_CANDIDATES (only the ones it leases are locked). */
const CANDIDATES_PER_SLOT = 4;
const MAX_CANDIDATES = 1_000;

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
      /** Take rows of these companies only (a claim made while another is in progress). */
      onlyCompanies?: string[];
    }): Promise<ClaimedDelivery[]> {
      // One statement, one round trip: read due rows, keep at most the free slots of each company, lock those
      // (skipping rows other claims hold; a row another worker leased meanwhile fails the re-checked
      // condition), lease them. More candidates are read than wanted, so a company whose few slots are taken
      // does not leave the others' slots empty until the next claim, but only the rows leased are locked.
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
             and (not ?::boolean or company_id in (select jsonb_array_elements_text(?::jsonb)))
           order by next_attempt_at
           limit ?
         ), ranked as (
           select c.webhook_id, c.company_id, c.next_attempt_at,
                  row_number() over (partition by c.company_id order by c.next_attempt_at) as rank
           from candidates c
         ), chosen as (
           select r.webhook_id from ranked r
           left join jsonb_to_recordset(?::jsonb) as s(company_id text, free int) on s.company_id = r.company_id
           where r.rank <= coalesce(s.free, ?)
           order by r.next_attempt_at
           limit ?
         ), locked as (
           select l.webhook_id from deliveries l
           where l.webhook_id in (select webhook_id from chosen)
             and l.status = 'pending' and l.next_attempt_at <= ?
             and (l.lease_until is null or l.lease_until < clock_timestamp())
           for update skip locked
         )
         update deliveries d set lease_id = ?, lease_until = clock_timestamp() + make_interval(secs => ?)
         from locked where d.webhook_id = locked.webhook_id
         returning d.webhook_id, d.source_event_id, d.company_id, d.kind, d.subject_id, d.body, d.attempts,
                   d.manual, d.next_attempt_at`,
        [
          o.now,
          JSON.stringify(o.fullCompanies),
          o.onlyCompanies !== undefined,
          JSON.stringify(o.onlyCompanies ?? []),
          Math.min(o.limit * CANDIDATES_PER_SLOT, MAX_CANDIDATES),
          JSON.stringify(slots),
          o.defaultSlots,
          o.limit,
          o.now,
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
     * Stores the results of claimed deliveries in one statement (atomic, one round trip): each row only if
     * its lease is still this worker's, and for those rows only: their attempts, their events (outbox, in
     * order) and the failure clocks of their companies. Returns the failure clock of every company whose
     * attempts failed here.
     */
    async complete(
      completions: Completion[],
    ): Promise<{ stored: Completion[]; failingSince: Map<string, Date> }> {
      if (completions.length === 0) return { stored: [], failingSince: new Map() };
      const iso = (d: Date | null) => d?.toISOString() ?? null;
      const rows = completions.map((c) => ({
        webhook_id: c.claim.webhookId,
        lease_id: c.claim.leaseId,
        status: c.update.status,
        attempts: c.update.attempts,
        next_attempt_at: iso(c.update.nextAttemptAt),
        last_status_code: c.update.lastStatusCode,
        last_error: c.update.lastError,
        finished_at: iso(c.update.finishedAt),
        manual: c.update.status === 'pending' ? c.claim.manual && !c.attempt : false,
      }));
      const attempts = completions.flatMap((c, ord) =>
        c.attempt
          ? [
              {
                ord,
                webhook_id: c.attempt.webhookId,
                attempt: c.attempt.attempt,
                trigger: c.attempt.trigger,
                url: c.attempt.url,
                status_code: c.attempt.statusCode,
                latency_ms: c.attempt.latencyMs,
                outcome: c.attempt.outcome,
                error: c.attempt.error,
                response_excerpt: c.attempt.responseExcerpt,
                next_attempt_at: iso(c.attempt.nextAttemptAt),
                attempted_at: iso(c.attempt.attemptedAt),
              },
            ]
          : [],
      );
      let ord = 0;
      const events = completions.flatMap((c) =>
        c.events.map((e) => ({
          ord: ord++,
          webhook_id: c.claim.webhookId,
          topic: e.topic.name,
          key: e.key,
          payload: Buffer.from(e.topic.codec.encode(e.record)).toString('base64'),
        })),
      );
      const health = completions.flatMap((c, ord) =>
        c.health
          ? [
              {
                ord,
                webhook_id: c.claim.webhookId,
                company_id: c.claim.companyId,
                ok: c.health.succeeded,
                at: iso(c.health.at),
              },
            ]
          : [],
      );
      // The failure clock of a company, from the stored results in order: the first failure after its last
      // success (or of all, with no success), kept from before unless a success reset it. Companies are
      // upserted in one order, so two replicas storing at once wait for each other rather than deadlock.
      const result = await db.raw<{
        rows: { kind: 'stored' | 'clock'; id: string; failing_since: Date | null }[];
      }>(
        `with updated as (
           update deliveries d set status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
             last_status_code = coalesce(v.last_status_code, d.last_status_code),
             last_error = coalesce(v.last_error, d.last_error), finished_at = v.finished_at, manual = v.manual,
             lease_id = null, lease_until = null
           from jsonb_to_recordset(?::jsonb) as v(webhook_id text, lease_id uuid, status text, attempts int,
             next_attempt_at timestamptz, last_status_code int, last_error text, finished_at timestamptz, manual boolean)
           where d.webhook_id = v.webhook_id and d.lease_id = v.lease_id
           returning d.webhook_id
         ), logged as (
           insert into attempts (webhook_id, attempt, trigger, url, status_code, latency_ms, outcome, error,
             response_excerpt, next_attempt_at, attempted_at)
           select a.webhook_id, a.attempt, a.trigger, a.url, a.status_code, a.latency_ms, a.outcome, a.error,
             a.response_excerpt, a.next_attempt_at, a.attempted_at
           from jsonb_to_recordset(?::jsonb) as a(ord int, webhook_id text, attempt int, trigger text, url text,
             status_code int, latency_ms int, outcome text, error text, response_excerpt text,
             next_attempt_at timestamptz, attempted_at timestamptz)
           where a.webhook_id in (select webhook_id from updated)
           order by a.ord
         ), relayed as (
           insert into outbox (topic, key, payload)
           select e.topic, e.key, decode(e.payload, 'base64')
           from jsonb_to_recordset(?::jsonb) as e(ord int, webhook_id text, topic text, key text, payload text)
           where e.webhook_id in (select webhook_id from updated)
           order by e.ord
         ), results as (
           select r.company_id, r.ok, r.at, r.ord,
                  max(r.ord) filter (where r.ok) over (partition by r.company_id) as last_ok
           from jsonb_to_recordset(?::jsonb) as r(ord int, webhook_id text, company_id text, ok boolean, at timestamptz)
           where r.webhook_id in (select webhook_id from updated)
         ), clocks as (
           select company_id, bool_or(ok) as reset,
                  (array_agg(at order by ord) filter (where not ok and ord > coalesce(last_ok, -1)))[1] as failing_since,
                  (array_agg(at order by ord desc))[1] as at
           from results group by company_id
         ), clocked as (
           insert into endpoint_health as h (company_id, failing_since, updated_at)
           select company_id, failing_since, at from clocks order by company_id
           on conflict (company_id) do update set
             failing_since = case
               when (select c.reset from clocks c where c.company_id = excluded.company_id) then excluded.failing_since
               else coalesce(h.failing_since, excluded.failing_since)
             end,
             updated_at = excluded.updated_at
           returning h.company_id, h.failing_since
         )
         select 'stored' as kind, webhook_id as id, null::timestamptz as failing_since from updated
         union all
         select 'clock', company_id, failing_since from clocked`,
        [JSON.stringify(rows), JSON.stringify(attempts), JSON.stringify(events), JSON.stringify(health)],
      );
      const kept = new Set<string>();
      const failingSince = new Map<string, Date>();
      for (const r of result.rows) {
        if (r.kind === 'stored') kept.add(r.id);
        else if (r.failing_since) failingSince.set(r.id, r.failing_since);
      }
      return { stored: completions.filter((c) => kept.has(c.claim.webhookId)), failingSince };
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
