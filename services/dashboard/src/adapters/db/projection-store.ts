import type { Knex } from '@mds/db';
import { latencyBucket } from '../../domain/latency.js';
import type { ProjectedEvent } from '../../domain/projection.js';
import { json, UUID, minuteOf, ofKind, tally } from './fold.js';
import { applyWebhooks, linkWebhookStatus } from './webhook-projection-store.js';

/**
 * Applies a batch of events (in log order) to the read models, in one transaction. Idempotent: an event
 * already in the timeline changes nothing, a message's first outcome decides it, and usage times only move
 * forward, so a batch handled again after a crash is harmless.
 */
export async function applyProjected(db: Knex, batch: readonly ProjectedEvent[]): Promise<void> {
  const events = batch.filter((e) => UUID.test(e.eventId) && UUID.test(e.companyId));
  if (events.length === 0) return;
  await db.transaction(async (trx) => {
    const fresh = await insertTimeline(
      trx,
      events.filter((e) => e.timeline),
    );
    const isNew = (e: ProjectedEvent) => !e.timeline || fresh.has(e.eventId);
    const news = events.filter(isNew);
    await applyMessages(trx, news);
    await applyWebhooks(trx, news);
    await linkWebhookStatus(trx, news);
    await applyUsage(trx, news);
  });
}

async function insertTimeline(
  trx: Knex.Transaction,
  events: readonly ProjectedEvent[],
): Promise<Set<string>> {
  const rows = events
    .filter((e) => UUID.test(e.subjectId) || e.subjectId.startsWith('msg_'))
    .map((e) => ({
      event_id: e.eventId,
      subject_id: e.subjectId.toLowerCase(),
      company_id: e.companyId,
      type: e.type,
      at: e.at,
      producer: e.producer,
      data: JSON.stringify(e.data),
    }));
  if (rows.length === 0) return new Set();
  const inserted = await trx('timeline').insert(rows).onConflict('event_id').ignore().returning<
    {
      event_id: string;
    }[]
  >('event_id');
  return new Set(inserted.map((r) => r.event_id));
}

type Decided = {
  company_id: string;
  messenger: string | null;
  bot_id: string | null;
  state: string;
  error_code: string | null;
  accepted_at: Date | null;
  finished_at: Date;
};

async function applyMessages(trx: Knex.Transaction, events: readonly ProjectedEvent[]): Promise<void> {
  const messageIds = <T extends ProjectedEvent>(list: readonly T[]) =>
    list.filter((e) => UUID.test(e.subjectId));
  const accepted = messageIds(ofKind(events, 'accepted'));
  const routed = messageIds(ofKind(events, 'routed'));
  const outcomes = messageIds(ofKind(events, 'outcome'));
  // A row for every message named, so an outcome or a routing read before its acceptance (another topic,
  // or trimmed history) has somewhere to go; the acceptance fills in the rest when it comes.
  const stubs = new Map<string, ProjectedEvent>();
  for (const e of [...accepted, ...routed, ...outcomes])
    if (!stubs.has(e.subjectId)) stubs.set(e.subjectId, e);
  if (stubs.size > 0) {
    await trx('messages')
      .insert(
        [...stubs.values()].map((e) => ({
          message_id: e.subjectId,
          company_id: e.companyId,
          state: 'new',
          sort_at: e.at,
        })),
      )
      .onConflict('message_id')
      .ignore();
  }
  if (accepted.length > 0) {
    await trx.raw(
      `update messages m set messenger = v.messenger, bot_name = v.bot_name, phone = v.phone, text = v.text,
         api_key_id = v.api_key_id, accepted_at = v.at, sort_at = v.at
       from jsonb_to_recordset(?::jsonb) as v(id uuid, messenger text, bot_name text, phone text, text text,
         api_key_id text, at timestamptz)
       where m.message_id = v.id`,
      [
        json(
          accepted.map((e) => ({
            id: e.subjectId,
            messenger: e.change.messenger,
            bot_name: e.change.botName,
            phone: e.change.phone,
            text: e.change.text || null,
            api_key_id: e.change.apiKeyId,
            at: e.at,
          })),
        ),
      ],
    );
  }
  if (routed.length > 0) {
    await trx.raw(
      `update messages m set bot_id = coalesce(m.bot_id, v.bot_id), chat_id = v.chat_id, routed_at = v.at
       from jsonb_to_recordset(?::jsonb) as v(id uuid, bot_id text, chat_id text, at timestamptz)
       where m.message_id = v.id and m.routed_at is null`,
      [
        json(
          routed.map((e) => ({
            id: e.subjectId,
            bot_id: e.change.botId,
            chat_id: e.change.chatId,
            at: e.at,
          })),
        ),
      ],
    );
  }
  if (outcomes.length === 0) return;
  // Only the first outcome of a message counts (monotonic, as the read API's fold): the update skips
  // messages already decided, and what it returns is what the per-minute counts add.
  const decided = (
    await trx.raw<{ rows: Decided[] }>(
      `update messages m set state = v.state, finished_at = v.finished_at, bot_id = coalesce(v.bot_id, m.bot_id),
         error_code = v.error_code, attempts = v.attempts
       from (select distinct on (id) * from jsonb_to_recordset(?::jsonb)
               as r(seq int, id uuid, state text, finished_at timestamptz, bot_id text, error_code text, attempts int)
             order by id, seq) v
       where m.message_id = v.id and m.state = 'new'
       returning m.company_id, m.messenger, m.bot_id, m.state, m.error_code, m.accepted_at, m.finished_at`,
      [
        json(
          outcomes.map((e, seq) => ({
            seq,
            id: e.subjectId,
            state: e.change.state,
            finished_at: e.change.finishedAt,
            bot_id: e.change.botId,
            error_code: e.change.errorCode,
            attempts: e.change.attempts,
          })),
        ),
      ],
    )
  ).rows;
  const counted = tally(decided, (d) => {
    const bucket = d.accepted_at ? latencyBucket(d.finished_at.getTime() - d.accepted_at.getTime()) : -1;
    return [
      d.company_id,
      minuteOf(d.finished_at).toISOString(),
      d.messenger ?? '',
      d.bot_id ?? '',
      d.state,
      d.error_code ?? '',
      bucket,
    ].join('|');
  });
  if (counted.length === 0) return;
  await trx.raw(
    `insert into outcome_minutes (company_id, minute, messenger, bot_id, state, error_code, latency_bucket, count)
     select * from jsonb_to_recordset(?::jsonb) as v(company_id uuid, minute timestamptz, messenger text, bot_id text,
       state text, error_code text, latency_bucket smallint, count int)
     on conflict (company_id, minute, messenger, bot_id, state, error_code, latency_bucket)
     do update set count = outcome_minutes.count + excluded.count`,
    [
      json(
        counted.map(([key, , count]) => {
          const [company_id, minute, messenger, bot_id, state, error_code, bucket] = key.split('|');
          return {
            company_id,
            minute,
            messenger,
            bot_id,
            state,
            error_code,
            latency_bucket: Number(bucket),
            count,
          };
        }),
      ),
    ],
  );
}

/** When each API key was last used, and when each bot last heard from a person: times only move forward. */
async function applyUsage(trx: Knex.Transaction, events: readonly ProjectedEvent[]): Promise<void> {
  const latest = (pairs: [string, string, Date, string][]) => {
    const out = new Map<string, [string, string, Date, string]>();
    for (const p of pairs) {
      const seen = out.get(p[0]);
      if (!seen || seen[2] < p[2]) out.set(p[0], p);
    }
    return [...out.values()].sort(([a], [b]) => (a < b ? -1 : 1));
  };
  const keys = latest(
    events.flatMap((e): [string, string, Date, string][] =>
      (e.change.kind === 'accepted' || e.change.kind === 'request') && e.change.apiKeyId
        ? [[e.change.apiKeyId, e.companyId, e.at, '']]
        : [],
    ),
  );
  if (keys.length > 0) {
    await trx.raw(
      `insert into api_key_usage as u (key_id, company_id, last_used_at)
       select * from jsonb_to_recordset(?::jsonb) as v(key_id text, company_id uuid, last_used_at timestamptz)
       on conflict (key_id) do update set last_used_at = greatest(u.last_used_at, excluded.last_used_at)`,
      [json(keys.map(([key_id, company_id, last_used_at]) => ({ key_id, company_id, last_used_at })))],
    );
  }
  const bots = latest(
    events.flatMap((e): [string, string, Date, string][] =>
      e.change.kind === 'bot-update' && UUID.test(e.change.botId)
        ? [[e.change.botId, e.companyId, e.at, e.type]]
        : [],
    ),
  );
  if (bots.length > 0) {
    await trx.raw(
      `insert into bot_activity as b (bot_id, company_id, last_update_at, last_update_type)
       select * from jsonb_to_recordset(?::jsonb) as v(bot_id text, company_id uuid, last_update_at timestamptz,
         last_update_type text)
       on conflict (bot_id) do update set last_update_at = excluded.last_update_at,
         last_update_type = excluded.last_update_type
       where excluded.last_update_at >= b.last_update_at`,
      [
        json(
          bots.map(([bot_id, company_id, at, type]) => ({
            bot_id,
            company_id,
            last_update_at: at,
            last_update_type: type,
          })),
        ),
      ],
    );
  }
}
