import { generateKeyPairSync } from 'node:crypto';
// npm run bench (dashboard): one company with 1,000,000 messages and their events (acceptance, routing,
// outcome, webhook attempts), then the messages page's first page, filtered searches (event id, words of the
// text in their window), a deep page, message timelines and the CSV export asked through the dashboard's HTTP
// API, signed in, on loopback. Targets (at the server): p95 <= 100 ms for the message log, <= 50 ms for a
// timeline.
// Loading: the dashboard's own projection folds the first BENCH_FOLDED messages' events (its throughput is
// printed); the rest are copies of those rows made in SQL with new ids, moved in time (the same shapes,
// phone numbers and spread of states, minutes instead of an hour of folding on 2 cores).
// Bounded: BENCH_MESSAGES (default 1,000,000), BENCH_FOLDED (50,000), BENCH_REQUESTS per kind (200).
import { randomUUID } from 'node:crypto';
import { loadConfig } from '@mds/config';
import {
  newEvent,
  type Complete,
  type DeliveryEvent,
  type MessageEvent,
  type WebhookEvent,
} from '@mds/contracts';
import { openDatabase } from '@mds/db';
import { startInfra } from '@mds/local-infra';
import { createLogger } from '@mds/logging';
import { Lifecycle } from '@mds/service-kit';
import { SCHEMA } from '../src/adapters/db/migrations.js';
import { applyProjected } from '../src/adapters/db/projection-store.js';
import { createAccessStore } from '../src/adapters/db/access-store.js';
import { createAccess } from '../src/application/access.js';
import { configSchema, startDashboard } from '../src/app.js';
import { projectEvent, type ProjectedEvent } from '../src/domain/projection.js';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 1_000_000);
const FOLDED = Math.min(MESSAGES, Number(process.env.BENCH_FOLDED ?? 50_000));
const COPIES = Math.ceil(MESSAGES / FOLDED);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const BATCH_MESSAGES = 1_000;
const ERROR_CODES = [
  'CLIENT_NOT_FOUND',
  'BOT_BLOCKED_BY_USER',
  'RATE_LIMITED_PAST_DEADLINE',
  'PROVIDER_ERROR',
  'CHAT_NOT_FOUND',
];
const quiet = createLogger({ service: 'dashboard-bench', level: 'silent' });
const log = (line: string) => console.log(`[bench] ${line}`);

// A deterministic spread: the same run gives the same data.
let seed = 42;
const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;

const infra = await startInfra({ name: `bench-dashboard-${process.pid}`, ephemeral: true, log });
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void infra.stop().finally(() => process.exit(130)));
}
const companyId = randomUUID();
const bots = Array.from({ length: 5 }, () => randomUUID());
const span = 30 * 86_400_000;
const start = Date.now() - span;
const phoneOf = (i: number) => `7916${String(i % 200_000).padStart(7, '0')}`;

/** The events of message i, as the services write them. */
function story(i: number, id: string): ProjectedEvent[] {
  const at = new Date(start + Math.floor((i / FOLDED) * (span / COPIES)));
  const t = (ms: number) => new Date(at.getTime() + ms);
  const botId = bots[i % bots.length]!;
  const messenger = i % 10 < 7 ? 1 : 2;
  const base = (streamId: string, ms: number, producer: string) => ({
    eventId: randomUUID(),
    occurredAt: t(ms),
    companyId,
    streamId,
    producer,
  });
  const out: (Complete<MessageEvent> | Complete<DeliveryEvent> | Complete<WebhookEvent>)[] = [
    newEvent<MessageEvent>({
      ...base(id, 0, 'gateway'),
      event: {
        $case: 'messageAccepted',
        value: {
          phoneNumber: phoneOf(i),
          text: `Order ${i} has shipped`,
          messenger,
          botName: '',
          buttons: [],
          apiKeyId: 'k1',
          idempotencyKey: '',
        },
      },
    }),
  ];
  const roll = random();
  if (roll < 0.02) return out.map((r) => projectEvent(r)!); // still new
  out.push(
    newEvent<DeliveryEvent>({
      ...base(botId, 4, 'client-registry'),
      event: {
        $case: 'deliveryRequested',
        value: {
          messageId: id,
          chat: { messenger, botId, chatId: String(i), userId: String(i) },
          botName: 'shop',
          text: '',
          buttons: [],
        },
      },
    }),
  );
  const latency = 20 + Math.floor(random() * random() * 3_000);
  out.push(
    newEvent<MessageEvent>({
      ...base(id, latency, 'telegram-sender'),
      event:
        roll < 0.9
          ? {
              $case: 'messageSent',
              value: { botId, providerMessageId: String(i), sentAt: t(latency), attempts: 1 },
            }
          : {
              $case: 'messageDeliveryFailed',
              value: {
                errorCode: pick(ERROR_CODES),
                errorDescription: 'no',
                failedAt: t(latency),
                attempts: 1,
                botId,
              },
            },
    }),
  );
  const webhookId = `msg_${randomUUID().replaceAll('-', '')}`;
  const attempts = random() < 0.05 ? 2 : 1;
  for (let a = 1; a <= attempts; a++) {
    const ok = a === attempts;
    out.push(
      newEvent<WebhookEvent>({
        ...base(webhookId, latency + 30 * a, 'webhook-dispatcher'),
        event: {
          $case: 'webhookAttempted',
          value: {
            kind: 'message.status',
            subjectId: id,
            attempt: a,
            url: 'https://hooks.example/mds',
            statusCode: ok ? 200 : 503,
            latencyMs: 40,
            outcome: ok ? 1 : 2,
            error: ok ? '' : 'HTTP 503',
            responseExcerpt: ok ? 'ok' : 'busy',
            endpointId: '',
          },
        },
      }),
    );
  }
  out.push(
    newEvent<WebhookEvent>({
      ...base(webhookId, latency + 30 * attempts, 'webhook-dispatcher'),
      event: {
        $case: 'webhookDelivered',
        value: { kind: 'message.status', subjectId: id, attempts, endpointId: '' },
      },
    }),
  );
  return out.map((r) => projectEvent(r)!);
}

const stats = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
  return `p50 ${at(0.5).toFixed(1).padStart(6)} ms   p95 ${at(0.95).toFixed(1).padStart(6)} ms   p99 ${at(0.99).toFixed(1).padStart(6)} ms   max ${sorted.at(-1)!.toFixed(1).padStart(6)} ms`;
};

const lifecycle = new Lifecycle(quiet, 20_000);
try {
  const databaseUrl = infra.databaseUrl;
  const { httpPort } = await startDashboard(
    loadConfig(configSchema, {
      KAFKA_BROKERS: infra.kafkaBrokers,
      KAFKA_TOPIC_PREFIX: `bench_${process.pid}.`,
      DATABASE_URL: databaseUrl,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: '0',
      LOG_LEVEL: 'silent',
      OPERATOR_PORT: '0',
      DASHBOARD_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }).d!,
      DASHBOARD_ADMIN_TOKEN: 'bench-operator-token',
      SIGN_IN_PER_ADDRESS_PER_MINUTE: '1000',
    }),
    { logger: quiet, lifecycle },
  );
  const base = `http://127.0.0.1:${httpPort}/api`;
  const db = await openDatabase({ url: databaseUrl, schema: SCHEMA, poolMax: 4 });

  // Load, 1: the projection folds the first messages' events, a thousand messages per transaction.
  const ids: string[] = [];
  const loadStart = performance.now();
  let events = 0;
  for (let i = 0; i < FOLDED; i += BATCH_MESSAGES) {
    const batch: ProjectedEvent[] = [];
    for (let j = i; j < Math.min(FOLDED, i + BATCH_MESSAGES); j++) {
      const id = randomUUID();
      if (j % 97 === 0) ids.push(id);
      batch.push(...story(j, id));
    }
    await applyProjected(db, batch);
    events += batch.length;
    if ((i / BATCH_MESSAGES) % 10 === 0) log(`folded ${i.toLocaleString('en')} messages`);
  }
  const loadSeconds = (performance.now() - loadStart) / 1000;
  // Load, 2: copies of the folded rows with new ids, each moved on by a slice of the month. (Tables of the
  // bench's own: the folded rows to copy from; the pool may run each statement on another connection.)
  const copyStart = performance.now();
  // Bulk loading the way one would: the secondary indexes go while copying and come back, as the migration
  // defines them, before anything is measured.
  const indexes = (
    await db.raw<{ rows: { indexname: string; indexdef: string }[] }>(
      `select indexname, indexdef from pg_indexes where schemaname = ?
         and tablename in ('messages', 'timeline', 'webhook_deliveries') and indexname not like '%_pkey'`,
      [SCHEMA],
    )
  ).rows;
  for (const index of indexes) await db.raw(`drop index ${SCHEMA}.${index.indexname}`);
  await db.raw(
    'create table bench_base_ids as select message_id as old_id from messages where company_id = ?',
    [companyId],
  );
  await db.raw('create table bench_base_minutes as select * from outcome_minutes where company_id = ?', [
    companyId,
  ]);
  await db.raw('create table bench_base_hook_minutes as select * from webhook_minutes where company_id = ?', [
    companyId,
  ]);
  for (let k = 1; k < COPIES; k++) {
    const shift = `${Math.floor((k * span) / COPIES / 1000)} seconds`;
    await db.transaction(async (trx) => {
      await trx.raw(`create temporary table copy_ids on commit drop as
        select old_id, gen_random_uuid() as new_id from bench_base_ids`);
      await trx.raw(`create temporary table copy_hooks on commit drop as
        select d.webhook_id as old_id, 'msg_' || replace(gen_random_uuid()::text, '-', '') as new_id, c.new_id as subject
        from webhook_deliveries d join copy_ids c on d.subject_id = c.old_id::text`);
      await trx.raw(
        `insert into messages (message_id, company_id, state, messenger, bot_name, bot_id, chat_id, phone, text,
          api_key_id, error_code, attempts, accepted_at, routed_at, finished_at, sort_at, webhook_attempts, webhook_status)
        select c.new_id, company_id, state, messenger, bot_name, bot_id, chat_id, phone, text, api_key_id, error_code, attempts,
          accepted_at + ?::interval, routed_at + ?::interval, finished_at + ?::interval, sort_at + ?::interval,
          webhook_attempts, webhook_status
        from messages m join copy_ids c on c.old_id = m.message_id`,
        [shift, shift, shift, shift],
      );
      await trx.raw(
        `insert into timeline (event_id, subject_id, company_id, type, at, producer, data)
        select gen_random_uuid(), c.new_id::text, company_id, type, at + ?::interval, producer, data
        from timeline t join copy_ids c on t.subject_id = c.old_id::text order by t.seq`,
        [shift],
      );
      await trx.raw(
        `insert into webhook_deliveries (webhook_id, company_id, subject_id, kind, status, attempts,
          last_status_code, last_error, url, last_attempt_at, next_attempt_at)
        select h.new_id, company_id, h.subject::text, kind, status, attempts, last_status_code, last_error, url,
          last_attempt_at + ?::interval, next_attempt_at + ?::interval
        from webhook_deliveries d join copy_hooks h on h.old_id = d.webhook_id`,
        [shift, shift],
      );
      await trx.raw(
        `insert into outcome_minutes select company_id, minute + ?::interval, messenger, bot_id, state, error_code,
          latency_bucket, count from bench_base_minutes on conflict do nothing`,
        [shift],
      );
      await trx.raw(
        `insert into webhook_minutes select company_id, minute + ?::interval, outcome, count from bench_base_hook_minutes
          on conflict do nothing`,
        [shift],
      );
    });
    log(`copied to ${((k + 1) * FOLDED).toLocaleString('en')} messages`);
  }
  await db.raw('drop table bench_base_ids, bench_base_minutes, bench_base_hook_minutes');
  for (const index of indexes) await db.raw(index.indexdef);
  const copySeconds = (performance.now() - copyStart) / 1000;
  const { total, timelineRows } = (
    await db.raw<{ rows: { total: number; timelineRows: number }[] }>(
      'select (select count(*) from messages)::int as total, (select count(*) from timeline)::int as "timelineRows"',
    )
  ).rows[0]!;
  // Timelines asked for: a thousand messages drawn from the whole month.
  const sampled = await db.raw<{
    rows: { message_id: string }[];
  }>('select message_id from messages order by random() limit 1000');
  ids.splice(0, ids.length, ...sampled.rows.map((r) => r.message_id));
  await db.raw('vacuum analyze messages');
  await db.raw('vacuum analyze timeline');
  const sizes = await db.raw<{ rows: { relname: string; size: string }[] }>(
    `select relname, pg_size_pretty(pg_total_relation_size(c.oid)) as size from pg_class c join pg_namespace n on n.oid = c.relnamespace
     where n.nspname = ? and relname in ('messages', 'timeline', 'webhook_deliveries', 'outcome_minutes')`,
    [SCHEMA],
  );

  // A member of the company, signed in through the API.
  const access = createAccess({
    store: createAccessStore(db),
    now: () => new Date(),
    policy: {
      sessionIdleMinutes: 60,
      sessionMaxHours: 24,
      signInFreeFailures: 5,
      signInMaxDelaySeconds: 900,
      signInsPerAddressPerMinute: 100,
      linkHours: 1,
    },
  });
  const invited = await access.invite({
    companyId,
    email: 'bench@example.test',
    role: 'viewer',
    invitedBy: null,
  });
  await access.setPassword(invited.token, 'a bench passphrase of some length');
  const signIn = await fetch(`${base}/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'bench@example.test', password: 'a bench passphrase of some length' }),
  });
  const cookie = signIn.headers.getSetCookie()[0]!.split(';')[0]!;

  async function timed(path: string): Promise<{ ms: number; body: Record<string, unknown> }> {
    const began = performance.now();
    const response = await fetch(`${base}${path}`, { headers: { cookie } });
    const body = (await response.json()) as Record<string, unknown>;
    const ms = performance.now() - began;
    if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
    return { ms, body };
  }
  async function measure(label: string, path: () => string): Promise<void> {
    for (let i = 0; i < 10; i++) await timed(path()); // warm-up
    const samples: number[] = [];
    let rows = 0;
    for (let i = 0; i < REQUESTS; i++) {
      const { ms, body } = await timed(path());
      samples.push(ms);
      const list = body.messages ?? body.timeline;
      rows += Array.isArray(list) ? list.length : 0;
    }
    console.log(`${label.padEnd(44)} ${stats(samples)}   (${(rows / REQUESTS).toFixed(0)} rows per answer)`);
  }
  const iso = (ms: number) => encodeURIComponent(new Date(ms).toISOString());
  const day = 86_400_000;

  console.log(
    `\nDashboard read models: ${total.toLocaleString('en')} messages of one company, ${timelineRows.toLocaleString('en')} timeline events`,
  );
  console.log(
    `  the projection folded the first ${FOLDED.toLocaleString('en')} messages' ${events.toLocaleString('en')} events in ${loadSeconds.toFixed(1)} s (${Math.round(events / loadSeconds).toLocaleString('en')} events/s, batches of ${BATCH_MESSAGES} messages); ${COPIES - 1} copies made in SQL in ${copySeconds.toFixed(0)} s`,
  );
  console.log(`  table sizes with indexes: ${sizes.rows.map((r) => `${r.relname} ${r.size}`).join(', ')}`);
  console.log(
    `  ${REQUESTS} requests each, one at a time, through the dashboard's HTTP API on loopback (signed in)\n`,
  );
  await measure('messages: first page (50, newest first)', () => '/messages?limit=50');
  await measure('messages: first page as the page asks (25)', () => '/messages?limit=25');
  await measure('search: one event id', () => `/messages?limit=25&event_id=${pick(ids)}`);
  await measure(
    'search: text, a word in every message',
    () => `/messages?limit=25&text=${pick(['shipped', 'SHIPPED', 'order'])}`,
  );
  await measure(
    'search: text, one order (window of 10,000)',
    () => `/messages?limit=25&text=${encodeURIComponent(`order ${Math.floor(random() * FOLDED)} has`)}`,
  );
  await measure('search: state=failed', () => '/messages?limit=50&state=failed');
  await measure('search: one error code', () => `/messages?limit=50&error_code=${pick(ERROR_CODES)}`);
  await measure(
    'search: a whole phone number',
    () => `/messages?limit=50&phone=${phoneOf(Math.floor(random() * 200_000))}`,
  );
  await measure(
    'search: a phone number prefix (7 digits)',
    () => `/messages?limit=50&phone=${phoneOf(Math.floor(random() * 200_000)).slice(0, 7)}`,
  );
  await measure('search: MAX + bot + a day in the month', () => {
    const from = start + Math.floor(random() * 28) * day;
    return `/messages?limit=50&service=max&bot_id=${pick(bots)}&from=${iso(from)}&to=${iso(from + day)}`;
  });
  await measure('search: failed on telegram in a week', () => {
    const from = start + Math.floor(random() * 20) * day;
    return `/messages?limit=50&state=failed&service=telegram&from=${iso(from)}&to=${iso(from + 7 * day)}`;
  });
  const page20 = await (async () => {
    let cursor = '';
    for (let i = 0; i < 20; i++)
      cursor = String(
        (await timed(`/messages?limit=50${cursor ? `&cursor=${cursor}` : ''}`)).body.next_cursor,
      );
    return cursor;
  })();
  await measure('messages: page 21 by cursor', () => `/messages?limit=50&cursor=${page20}`);
  await measure('timeline of one message', () => `/messages/${pick(ids)}`);
  await measure('overview: last 7 days (not a target)', () => '/overview?range=7d');
  // The CSV export at its row limit, streamed: the time to the last byte, and how much the process grew.
  for (const [label, query] of [
    ['export: CSV at its limit (100,000 rows)', ''],
    ['export: CSV of failed on telegram', '?state=failed&service=telegram'],
  ] as const) {
    const rssBefore = process.memoryUsage().rss;
    const began = performance.now();
    const response = await fetch(`${base}/messages.csv${query}`, { headers: { cookie } });
    let bytes = 0;
    let lines = 0;
    for await (const chunk of response.body!) {
      bytes += (chunk as Uint8Array).length;
      for (const b of chunk as Uint8Array) if (b === 10) lines++;
    }
    const seconds = (performance.now() - began) / 1000;
    console.log(
      `${label.padEnd(44)} ${(lines - 1).toLocaleString('en')} rows, ${(bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(2)} s (${Math.round((lines - 1) / seconds).toLocaleString('en')} rows/s); resident memory ${((process.memoryUsage().rss - rssBefore) / 1e6).toFixed(0)} MB more after it`,
    );
  }
  await db.destroy();
} finally {
  await lifecycle.stop();
  await infra.stop();
}
