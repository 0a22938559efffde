import { cleanText } from '@mds/contracts';
import type { Knex } from '@mds/db';
import {
  endpointKey,
  type Arrival,
  type AttemptEntry,
  type ClaimedDelivery,
  type Completion,
  type EndpointKey,
} from '../../application/ports.js';

/** One entry of a delivery's attempt log, as stored (and shown by the admin API). */
export interface StoredAttempt {
  attempt: number;
  trigger: 'scheduled' | 'manual';
  url: string;
  status_code: number;
  latency_ms: number;
  outcome: string;
  error: string | null;
  response_excerpt: string;
  next_attempt_at: string | null;
  attempted_at: string;
}

export interface DeliveryView {
  webhook_id: string;
  source_event_id: string;
  company_id: string;
  endpoint_id: string;
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
  attempt_log: StoredAttempt[];
}

/** Rows a claim reads per delivery it wants, at most MAX_CANDIDATES (only the ones it leases are locked). */
const CANDIDATES_PER_SLOT = 4;
const MAX_CANDIDATES = 1_000;

const iso = (d: Date | null) => d?.toISOString() ?? null;

/**
 * Text as a row keeps it: the endpoint's words arrive cleaned (the sender's), and what is written around them is
 * ours; the one rule of @mds/contracts is still applied at the write, so no NUL or lone surrogate (refused by
 * text and jsonb alike, which once failed a whole batch of results and wedged every company's webhooks) can
 * reach a row whatever a future path hands in.
 */
const STORED_TEXT_CHARS = 70_000;
const storable = (value: string) => cleanText(value, STORED_TEXT_CHARS);

function logEntry(a: AttemptEntry): StoredAttempt {
  return {
    attempt: a.attempt,
    trigger: a.trigger,
    url: storable(a.url),
    status_code: a.statusCode,
    latency_ms: a.latencyMs,
    outcome: a.outcome,
    error: a.error === null ? null : storable(a.error),
    response_excerpt: storable(a.responseExcerpt),
    next_attempt_at: iso(a.nextAttemptAt),
    attempted_at: a.attemptedAt.toISOString(),
  };
}

/** A row a claim took. */
interface ClaimedRow {
  webhook_id: string;
  source_event_id: string;
  company_id: string;
  endpoint_id: string;
  kind: string;
  subject_id: string;
  body: string;
  attempts: number;
  manual: boolean;
  next_attempt_at: Date;
  traceparent: string | null;
  tracestate: string | null;
}

const claimedOf = (r: ClaimedRow, leaseId: string): ClaimedDelivery => ({
  webhookId: r.webhook_id,
  leaseId,
  sourceEventId: r.source_event_id,
  companyId: r.company_id,
  endpointId: r.endpoint_id,
  kind: r.kind,
  subjectId: r.subject_id,
  body: r.body,
  attempts: r.attempts,
  manual: r.manual,
  ...(r.traceparent ? { traceparent: r.traceparent, tracestate: r.tracestate ?? '' } : {}),
});

/**
 * One statement, one round trip: read due rows, keep at most the free slots of each endpoint, lock those
 * (skipping rows other claims hold; a row another worker leased meanwhile fails the re-checked condition),
 * lease them. More candidates are read than wanted, so an endpoint whose few slots are taken does not leave
 * the others' slots empty until the next claim, but only the rows leased are locked.
 */
const CLAIM = `with candidates as (
         select webhook_id, company_id || '/' || endpoint_id as endpoint, next_attempt_at from deliveries
         where status = 'pending' and next_attempt_at <= ?
           and (lease_until is null or lease_until < clock_timestamp())
           and company_id || '/' || endpoint_id <> all(select jsonb_array_elements_text(?::jsonb))
         order by next_attempt_at
         limit ?
       ), ranked as (
         select c.webhook_id, c.endpoint, c.next_attempt_at,
                row_number() over (partition by c.endpoint order by c.next_attempt_at) as rank
         from candidates c
       ), chosen as (
         select r.webhook_id from ranked r
         left join jsonb_to_recordset(?::jsonb) as s(endpoint text, free int) on s.endpoint = r.endpoint
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
       returning d.webhook_id, d.source_event_id, d.company_id, d.endpoint_id, d.kind, d.subject_id, d.body,
                 d.attempts, d.manual, d.next_attempt_at, d.traceparent, d.tracestate`;

/** The dispatcher's deliveries and endpoint health in PostgreSQL: one statement per call. */
export class PgDeliveryStore {
  constructor(private readonly db: Knex) {}

  /**
   * Stores new deliveries, one row each, in the state their arrival left them in (see Arrival): attempted
   * already (their result and attempt log), being attempted by this replica (leased to `leaseId`: another
   * takes them only once the lease runs out), or waiting for a claim. A source event stored before is
   * dropped: it came again. Returns the webhook ids stored now.
   */
  async ingest(
    arrivals: readonly Arrival[],
    lease: { leaseId: string; seconds: number },
  ): Promise<Set<string>> {
    if (arrivals.length === 0) return new Set();
    const rows = arrivals.map(({ delivery: d, state }) => {
      const done = state.kind === 'done' ? state.completion : undefined;
      return {
        webhook_id: d.webhookId,
        source_event_id: d.sourceEventId,
        company_id: d.companyId,
        endpoint_id: d.endpointId,
        kind: d.kind,
        subject_id: d.subjectId,
        body: d.body,
        created_at: d.createdAt.toISOString(),
        leased: state.kind === 'leased',
        status: done?.update.status ?? 'pending',
        attempts: done?.update.attempts ?? 0,
        next_attempt_at: done ? iso(done.update.nextAttemptAt) : d.createdAt.toISOString(),
        last_status_code: done?.update.lastStatusCode ?? null,
        last_error: done?.update.lastError ? storable(done.update.lastError) : null,
        finished_at: done ? iso(done.update.finishedAt) : null,
        attempt_log: done?.attempt ? [logEntry(done.attempt)] : [],
        traceparent: d.traceparent || null,
        tracestate: d.tracestate || null,
      };
    });
    const { rows: stored } = await this.db.raw<{ rows: { webhook_id: string }[] }>(
      `insert into deliveries (webhook_id, source_event_id, company_id, endpoint_id, kind, subject_id, body, status,
         attempts, next_attempt_at, last_status_code, last_error, finished_at, attempt_log, created_at, lease_id,
         lease_until, traceparent, tracestate)
       select v.webhook_id, v.source_event_id, v.company_id, v.endpoint_id, v.kind, v.subject_id, v.body, v.status,
         v.attempts,
         v.next_attempt_at, v.last_status_code, v.last_error, v.finished_at, v.attempt_log, v.created_at,
         case when v.leased then ?::uuid end,
         case when v.leased then clock_timestamp() + make_interval(secs => ?) end,
         v.traceparent, v.tracestate
       from jsonb_to_recordset(?::jsonb) as v(webhook_id text, source_event_id uuid, company_id text,
         endpoint_id text, kind text, subject_id text, body text, created_at timestamptz, leased boolean, status text, attempts int,
         next_attempt_at timestamptz, last_status_code int, last_error text, finished_at timestamptz,
         attempt_log jsonb, traceparent text, tracestate text)
       on conflict (source_event_id, endpoint_id) do nothing
       returning webhook_id`,
      [lease.leaseId, lease.seconds, JSON.stringify(rows)],
    );
    return new Set(stored.map((r) => r.webhook_id));
  }

  /** The source events among these that have a delivery already (they came again after a restart). */
  async stored(sourceEventIds: readonly string[]): Promise<Set<string>> {
    if (sourceEventIds.length === 0) return new Set();
    const rows = await this.db('deliveries')
      .whereIn('source_event_id', sourceEventIds)
      .select<{ source_event_id: string }[]>('source_event_id');
    return new Set(rows.map((r) => r.source_event_id));
  }

  /**
   * Takes up to `limit` due deliveries: rows locked by another worker's claim are skipped, rows leased by
   * another worker are skipped until the lease (database time) runs out. An endpoint may take at most its
   * free slots (`freeSlots`, `defaultSlots` for one absent from it); `fullEndpoints` take none.
   */
  async claim(o: {
    now: Date;
    limit: number;
    leaseId: string;
    leaseSeconds: number;
    fullEndpoints: readonly EndpointKey[];
    freeSlots: readonly (EndpointKey & { free: number })[];
    defaultSlots: number;
  }): Promise<ClaimedDelivery[]> {
    const keyed = (e: EndpointKey) => endpointKey(e);
    const slots = o.freeSlots.map((e) => ({ endpoint: keyed(e), free: e.free }));
    const result = await this.db.raw<{ rows: ClaimedRow[] }>(CLAIM, [
      o.now,
      JSON.stringify(o.fullEndpoints.map(keyed)),
      Math.min(o.limit * CANDIDATES_PER_SLOT, MAX_CANDIDATES),
      JSON.stringify(slots),
      o.defaultSlots,
      o.limit,
      o.now,
      o.leaseId,
      o.leaseSeconds,
    ]);
    return result.rows
      .sort((a, b) => a.next_attempt_at.getTime() - b.next_attempt_at.getTime())
      .map((r) => claimedOf(r, o.leaseId));
  }

  /**
   * Stores the results of leased deliveries in one statement: each row only if its lease is still this
   * worker's, its attempt appended to the row's attempt log. Returns the webhook ids stored.
   */
  async complete(completions: readonly Completion[]): Promise<Set<string>> {
    if (completions.length === 0) return new Set();
    const rows = completions.map((c) => ({
      webhook_id: c.claim.webhookId,
      lease_id: c.claim.leaseId,
      status: c.update.status,
      attempts: c.update.attempts,
      next_attempt_at: iso(c.update.nextAttemptAt),
      last_status_code: c.update.lastStatusCode,
      last_error: c.update.lastError === null ? null : storable(c.update.lastError),
      finished_at: iso(c.update.finishedAt),
      manual: c.update.manual,
      entry: c.attempt ? logEntry(c.attempt) : null,
    }));
    const { rows: stored } = await this.db.raw<{ rows: { webhook_id: string }[] }>(
      `update deliveries d set status = v.status, attempts = v.attempts, next_attempt_at = v.next_attempt_at,
         last_status_code = coalesce(v.last_status_code, d.last_status_code),
         last_error = coalesce(v.last_error, d.last_error), finished_at = v.finished_at, manual = v.manual,
         lease_id = null, lease_until = null,
         attempt_log = case when v.entry is null then d.attempt_log else d.attempt_log || jsonb_build_array(v.entry) end
       from jsonb_to_recordset(?::jsonb) as v(webhook_id text, lease_id uuid, status text, attempts int,
         next_attempt_at timestamptz, last_status_code int, last_error text, finished_at timestamptz,
         manual boolean, entry jsonb)
       where d.webhook_id = v.webhook_id and d.lease_id = v.lease_id
       returning d.webhook_id`,
      [JSON.stringify(rows)],
    );
    return new Set(stored.map((r) => r.webhook_id));
  }

  /** See DeliveryStore.moveFailureClocks. */
  async moveFailureClocks(
    changes: readonly (EndpointKey & { reset: boolean; since: Date | null; at: Date })[],
  ): Promise<Map<string, Date | null>> {
    if (changes.length === 0) return new Map();
    // Endpoints in one order, so two replicas storing at once wait for each other rather than deadlock.
    const sorted = [...changes].sort((a, b) => (endpointKey(a) < endpointKey(b) ? -1 : 1));
    const rows = sorted.map((c) => ({
      company_id: c.companyId,
      endpoint_id: c.endpointId,
      reset: c.reset,
      since: iso(c.since),
      at: iso(c.at),
    }));
    const { rows: clocks } = await this.db.raw<{
      rows: { company_id: string; endpoint_id: string; failing_since: Date | null }[];
    }>(
      `insert into endpoint_health as h (company_id, endpoint_id, failing_since, updated_at)
       select v.company_id, v.endpoint_id, v.since, v.at
       from jsonb_to_recordset(?::jsonb) as v(company_id text, endpoint_id text, since timestamptz, at timestamptz)
       on conflict (company_id, endpoint_id) do update set
         failing_since = case
           when (select v.reset from jsonb_to_recordset(?::jsonb) as v(company_id text, endpoint_id text, reset boolean)
                 where v.company_id = excluded.company_id and v.endpoint_id = excluded.endpoint_id)
             then excluded.failing_since
           else coalesce(h.failing_since, excluded.failing_since)
         end,
         updated_at = excluded.updated_at
       returning h.company_id, h.endpoint_id, h.failing_since`,
      [JSON.stringify(rows), JSON.stringify(rows)],
    );
    return new Map(
      clocks.map((r) => [
        endpointKey({ companyId: r.company_id, endpointId: r.endpoint_id }),
        r.failing_since,
      ]),
    );
  }

  /** Deliveries by webhook id (msg_...) or by the public event_id they are about, with their attempts. */
  async find(id: string): Promise<DeliveryView[]> {
    return this.db('deliveries')
      .where(id.startsWith('msg_') ? { webhook_id: id } : { subject_id: id })
      .orderBy('created_at')
      .select<DeliveryView[]>(
        'webhook_id',
        'source_event_id',
        'company_id',
        'endpoint_id',
        'kind',
        'subject_id',
        'status',
        'attempts',
        'next_attempt_at',
        'last_status_code',
        'last_error',
        'created_at',
        'finished_at',
        'body',
        'attempt_log',
      );
  }

  /** Tries one delivery again now; one that had finished gets one manual attempt. */
  async resend(webhookId: string, now: Date): Promise<boolean> {
    const rows = await this.db('deliveries')
      .where({ webhook_id: webhookId })
      .update({
        manual: this.db.raw(`status <> 'pending'`),
        status: 'pending',
        next_attempt_at: now,
        finished_at: null,
      })
      .returning('webhook_id');
    return rows.length > 0;
  }

  /**
   * Every failed delivery of a company to one of these endpoints created in [since, until] gets one manual
   * attempt now.
   */
  async recover(
    companyId: string,
    endpointIds: readonly string[],
    since: Date,
    until: Date,
    now: Date,
  ): Promise<number> {
    if (endpointIds.length === 0) return 0;
    const rows = await this.db('deliveries')
      .where({ company_id: companyId, status: 'failed' })
      .whereIn('endpoint_id', endpointIds)
      .andWhere('created_at', '>=', since)
      .andWhere('created_at', '<=', until)
      .update({ status: 'pending', manual: true, next_attempt_at: now, finished_at: null })
      .returning('webhook_id');
    return rows.length;
  }

  /**
   * When the longest-waiting due delivery (pending, next_attempt_at <= now, no worker on it) was due; null
   * if none is.
   */
  async oldestDue(now: Date): Promise<Date | null> {
    const row = await this.db('deliveries')
      .where({ status: 'pending' })
      .andWhere('next_attempt_at', '<=', now)
      .andWhere((q) => q.whereNull('lease_until').orWhere('lease_until', '<', this.db.fn.now()))
      .min<{ due: Date | null }>('next_attempt_at as due')
      .first();
    return row?.due ?? null;
  }
}

export function createDeliveryStore(db: Knex): PgDeliveryStore {
  return new PgDeliveryStore(db);
}

export type DeliveryRecords = PgDeliveryStore;
