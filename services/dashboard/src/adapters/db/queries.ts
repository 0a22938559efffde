import { messengerNamed, messengers } from '@mds/contracts';
import type { Knex } from '@mds/db';
import { quantileOf } from '../../domain/latency.js';
import type { Overview } from '../../domain/views.js';
import { MESSAGE_COLUMNS, type MessageRow } from './message-log.js';

export type { Overview };

export interface TimelineEntry {
  event_id: string;
  type: string;
  at: Date;
  producer: string;
  data: Record<string, unknown>;
}

/** A message's row (if it is a message) and every event of its timeline, oldest first; undefined if not the company's. */
export async function timelineOf(
  db: Knex,
  companyId: string,
  subjectId: string,
): Promise<{ message: MessageRow | undefined; timeline: TimelineEntry[] } | undefined> {
  const [message, timeline] = await Promise.all([
    db('messages').where({ message_id: subjectId, company_id: companyId }).first(MESSAGE_COLUMNS) as Promise<
      MessageRow | undefined
    >,
    db('timeline')
      .where({ subject_id: subjectId, company_id: companyId })
      .orderBy([{ column: 'at' }, { column: 'seq' }])
      .select('event_id', 'type', 'at', 'producer', 'data') as Promise<TimelineEntry[]>,
  ]);
  if (!message && timeline.length === 0) return undefined;
  return { message, timeline };
}

const RATE_LIMITED = 'RATE_LIMITED_PAST_DEADLINE';

/** The overview's figures over [since, until), from the per-minute counts. */
export async function overviewOf(db: Knex, companyId: string, since: Date, until: Date): Promise<Overview> {
  const spanMinutes = Math.max(1, (until.getTime() - since.getTime()) / 60_000);
  const bucketMinutes = [1, 5, 15, 60, 360].find((m) => spanMinutes / m <= 96) ?? 1440;
  const bucketMs = bucketMinutes * 60_000;
  // Summed into the chart's buckets by the database: a busy month has a row for nearly every minute and kind.
  const bucketSeconds = bucketMs / 1000;
  const bucketOf = db.raw('to_timestamp(floor(extract(epoch from minute) / ?) * ?) as minute', [
    bucketSeconds,
    bucketSeconds,
  ]);
  const summed = db.raw('sum(count)::int as count');
  const [outcomes, hooks] = await Promise.all([
    db('outcome_minutes')
      .where('company_id', companyId)
      .andWhere('minute', '>=', since)
      .andWhere('minute', '<', until)
      .groupByRaw('1, 2, 3, 4, 5, 6')
      .select(bucketOf, 'messenger', 'bot_id', 'state', 'error_code', 'latency_bucket', summed) as Promise<
      {
        minute: Date;
        messenger: string;
        bot_id: string;
        state: string;
        error_code: string;
        latency_bucket: number;
        count: number;
      }[]
    >,
    db('webhook_minutes')
      .where('company_id', companyId)
      .andWhere('minute', '>=', since)
      .andWhere('minute', '<', until)
      .groupByRaw('1, 2')
      .select(bucketOf, 'outcome', summed) as Promise<{ minute: Date; outcome: string; count: number }[]>,
  ]);
  const first = Math.floor(since.getTime() / bucketMs) * bucketMs;
  const buckets = Math.ceil((until.getTime() - first) / bucketMs);
  const zeros = Object.fromEntries(
    messengers().flatMap((m) => [`${m.name}_sent`, `${m.name}_failed`].map((k) => [k, 0])),
  );
  const series: Overview['series'] = Array.from({ length: buckets }, (_, i) => ({
    at: new Date(first + i * bucketMs).toISOString(),
    ...zeros,
  }));
  const totals = { sent: 0, failed: 0 };
  const errors = new Map<string, { error_code: string; messenger: string; count: number }>();
  const latency = new Map<number, number>();
  const bots = new Map<
    string,
    { bot_id: string; messenger: string; sent: number; failed: number; rate_limited: number }
  >();
  for (const row of outcomes) {
    const slot = series[Math.floor((row.minute.getTime() - first) / bucketMs)];
    const sent = row.state === 'sent';
    // A messenger this build no longer knows has no series (its counts stay in the totals, errors and bots).
    if (slot && messengerNamed(row.messenger)) {
      const count = `${row.messenger}_${sent ? 'sent' : 'failed'}` as const;
      slot[count] = (slot[count] ?? 0) + row.count;
    }
    totals[sent ? 'sent' : 'failed'] += row.count;
    if (!sent) {
      const key = `${row.error_code}|${row.messenger}`;
      const e = errors.get(key) ?? { error_code: row.error_code, messenger: row.messenger, count: 0 };
      e.count += row.count;
      errors.set(key, e);
    }
    if (row.latency_bucket >= 0)
      latency.set(row.latency_bucket, (latency.get(row.latency_bucket) ?? 0) + row.count);
    if (row.bot_id) {
      const b = bots.get(row.bot_id) ?? {
        bot_id: row.bot_id,
        messenger: row.messenger,
        sent: 0,
        failed: 0,
        rate_limited: 0,
      };
      if (sent) b.sent += row.count;
      else b.failed += row.count;
      if (row.error_code === RATE_LIMITED) b.rate_limited += row.count;
      bots.set(row.bot_id, b);
    }
  }
  const hookSeries = series.map((s) => ({ at: s.at, succeeded: 0, failed: 0 }));
  let attempts = 0;
  let succeeded = 0;
  for (const row of hooks) {
    attempts += row.count;
    const ok = row.outcome === 'succeeded';
    if (ok) succeeded += row.count;
    const slot = hookSeries[Math.floor((row.minute.getTime() - first) / bucketMs)];
    if (slot) slot[ok ? 'succeeded' : 'failed'] += row.count;
  }
  const finite = (v: number | null) => (v === null || Number.isFinite(v) ? v : null);
  return {
    since: since.toISOString(),
    until: until.toISOString(),
    bucketMinutes,
    series,
    totals,
    errors: [...errors.values()].sort((a, b) => b.count - a.count),
    latency: {
      p50: finite(quantileOf(latency, 0.5)),
      p90: finite(quantileOf(latency, 0.9)),
      p99: finite(quantileOf(latency, 0.99)),
      count: [...latency.values()].reduce((a, b) => a + b, 0),
    },
    bots: [...bots.values()].sort((a, b) => b.sent + b.failed - (a.sent + a.failed)),
    webhooks: {
      attempts,
      succeeded,
      success_rate: attempts ? succeeded / attempts : null,
      series: hookSeries,
    },
  };
}

/** When each of a company's API keys was last used (from the requests in the log). */
export async function keyUsage(db: Knex, companyId: string): Promise<Map<string, Date>> {
  const rows = await db('api_key_usage').where('company_id', companyId).select<
    {
      key_id: string;
      last_used_at: Date;
    }[]
  >('key_id', 'last_used_at');
  return new Map(rows.map((r) => [r.key_id, r.last_used_at]));
}

/** When each of a company's bots last had an update from a person, and of which kind. */
export async function botActivity(
  db: Knex,
  companyId: string,
): Promise<Map<string, { at: Date; type: string }>> {
  const rows = await db('bot_activity').where('company_id', companyId).select<
    {
      bot_id: string;
      last_update_at: Date;
      last_update_type: string;
    }[]
  >('bot_id', 'last_update_at', 'last_update_type');
  return new Map(rows.map((r) => [r.bot_id, { at: r.last_update_at, type: r.last_update_type }]));
}

/** How one endpoint has fared: attempts over the last 24 hours and its latest failed attempt. */
export interface EndpointHealth {
  attempts_24h: number;
  succeeded_24h: number;
  /** succeeded / attempts; null without attempts. */
  success_rate_24h: number | null;
  last_failure: {
    at: Date;
    outcome: string;
    status_code: number | null;
    error: string | null;
  } | null;
}

/** Each of a company's endpoints' health, by endpoint id (endpoints never tried are absent). */
export async function endpointHealth(
  db: Knex,
  companyId: string,
  now: Date,
): Promise<Map<string, EndpointHealth>> {
  const since = new Date(minuteFloor(now).getTime() - 24 * 3_600_000);
  const [counts, failures] = await Promise.all([
    db('webhook_minutes')
      .where('company_id', companyId)
      .andWhere('minute', '>=', since)
      .groupBy('endpoint_id')
      .select(
        'endpoint_id',
        db.raw('sum(count)::int as attempts'),
        db.raw(`(sum(count) filter (where outcome = 'succeeded'))::int as succeeded`),
      ) as Promise<{ endpoint_id: string; attempts: number; succeeded: number | null }[]>,
    db('webhook_endpoint_failures')
      .where('company_id', companyId)
      .select('endpoint_id', 'at', 'outcome', 'status_code', 'error') as Promise<
      { endpoint_id: string; at: Date; outcome: string; status_code: number | null; error: string | null }[]
    >,
  ]);
  const health = new Map<string, EndpointHealth>();
  const of = (id: string) => {
    let h = health.get(id);
    if (!h) {
      h = { attempts_24h: 0, succeeded_24h: 0, success_rate_24h: null, last_failure: null };
      health.set(id, h);
    }
    return h;
  };
  for (const c of counts) {
    const h = of(c.endpoint_id);
    h.attempts_24h = c.attempts;
    h.succeeded_24h = c.succeeded ?? 0;
    h.success_rate_24h = c.attempts ? h.succeeded_24h / c.attempts : null;
  }
  for (const { endpoint_id, ...failure } of failures) of(endpoint_id).last_failure = failure;
  return health;
}

const minuteFloor = (at: Date) => new Date(Math.floor(at.getTime() / 60_000) * 60_000);
