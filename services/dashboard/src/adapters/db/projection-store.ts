import type { Knex } from '@mds/db';
import { newLifecycle, type EventStatus } from '@mds/message-state';
import { latencyBucket } from '../../domain/latency.js';
import {
  changesLoggedMessage,
  decidedBy,
  foldLoggedMessages,
  messageKey,
  newLoggedMessage,
  type LoggedMessage,
} from '../../domain/logged-message.js';
import type { ProjectedEvent } from '../../domain/projection.js';
import type { MessageRow } from './message-log.js';
import { json, UUID, minuteOf, tally } from './fold.js';
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

/** A message's row as PostgreSQL gives it back (as the log reads it), with the columns the fold writes. */
type StoredMessage = Omit<MessageRow, 'state' | 'webhook_status' | 'webhook_attempts'> & {
  company_id: string;
  state: EventStatus;
  text: string | null;
};

/** The columns the fold writes; the webhook's (webhook_attempts, webhook_status) are another fold's. */
const MESSAGE_COLUMNS = [
  'message_id',
  'company_id',
  'state',
  'messenger',
  'bot_name',
  'bot_id',
  'chat_id',
  'phone',
  'text',
  'api_key_id',
  'error_code',
  'attempts',
  'accepted_at',
  'routed_at',
  'finished_at',
  'sort_at',
] as const satisfies readonly (keyof StoredMessage)[];

function storedOf(row: LoggedMessage): StoredMessage {
  const l = row.lifecycle;
  return {
    message_id: row.messageId,
    company_id: row.companyId,
    state: l.status,
    messenger: l.messenger,
    bot_name: l.botName,
    bot_id: l.botId,
    chat_id: row.chatId,
    phone: row.phone,
    text: row.text,
    api_key_id: row.apiKeyId,
    error_code: l.errorCode,
    attempts: l.attempts,
    accepted_at: l.acceptedAt,
    routed_at: row.routedAt,
    finished_at: l.finishedAt,
    sort_at: row.sortAt,
  };
}

/** The inverse of storedOf, for what the row keeps (its lifecycle's kind, description and result it does not). */
function rowOf(m: StoredMessage): LoggedMessage {
  return {
    messageId: m.message_id,
    companyId: m.company_id,
    lifecycle: {
      ...newLifecycle('message', m.sort_at),
      status: m.state,
      acceptedAt: m.accepted_at,
      finishedAt: m.finished_at,
      errorCode: m.error_code,
      messenger: m.messenger,
      botName: m.bot_name,
      botId: m.bot_id,
      attempts: m.attempts,
    },
    phone: m.phone,
    text: m.text,
    apiKeyId: m.api_key_id,
    chatId: m.chat_id,
    routedAt: m.routed_at,
    sortAt: m.sort_at,
  };
}

/**
 * Folds the batch's acceptances, routings and outcomes into the message rows with the domain's rules
 * (logged-message.ts, @mds/message-state's lifecycle): the SQL only reads the rows, locked, and writes them back.
 * Every message named gets its row first, so that two consumers folding one message at once (its outcome and
 * its routing come from different topics) take turns on its row instead of each folding from nothing.
 */
async function applyMessages(trx: Knex.Transaction, events: readonly ProjectedEvent[]): Promise<void> {
  const folded = events.filter(changesLoggedMessage).filter((e) => UUID.test(e.subjectId));
  if (folded.length === 0) return;
  const firsts = new Map<string, ProjectedEvent>();
  for (const e of folded) if (!firsts.has(messageKey(e))) firsts.set(messageKey(e), e);
  const ids = [...firsts.keys()].sort();
  const columns = MESSAGE_COLUMNS.join(', ');
  await trx.raw(
    `insert into messages (${columns})
     select ${columns} from jsonb_populate_recordset(null::messages, ?::jsonb)
     on conflict (message_id) do nothing`,
    [json(ids.map((id) => storedOf(newLoggedMessage(firsts.get(id)!))))],
  );
  const stored = (
    await trx.raw<{ rows: StoredMessage[] }>(
      `select ${columns} from messages where message_id = any(?::uuid[]) order by message_id for update`,
      [ids],
    )
  ).rows;
  const before = new Map(stored.map((m) => [m.message_id, rowOf(m)]));
  const after = foldLoggedMessages(before, folded);
  const changed = [...after.values()].filter((row) => row !== before.get(row.messageId));
  if (changed.length > 0) {
    await trx.raw(
      `update messages m set ${MESSAGE_COLUMNS.filter((c) => c !== 'message_id')
        .map((c) => `${c} = v.${c}`)
        .join(', ')}
       from jsonb_populate_recordset(null::messages, ?::jsonb) v
       where m.message_id = v.message_id`,
      [json(changed.map(storedOf))],
    );
  }
  const decided = [...after.values()].filter((row) => decidedBy(before.get(row.messageId), row));
  await countOutcomes(trx, decided);
}

/** Adds the messages the batch decided to the per-minute outcome counts (the overview's). */
async function countOutcomes(trx: Knex.Transaction, decided: readonly LoggedMessage[]): Promise<void> {
  const counted = tally(decided, ({ companyId, lifecycle: d }) => {
    const finishedAt = d.finishedAt!;
    const bucket = d.acceptedAt ? latencyBucket(finishedAt.getTime() - d.acceptedAt.getTime()) : -1;
    return [
      companyId,
      minuteOf(finishedAt).toISOString(),
      d.messenger ?? '',
      d.botId ?? '',
      d.status,
      d.errorCode ?? '',
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
