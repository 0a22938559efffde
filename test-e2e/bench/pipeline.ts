// npm run bench (test-e2e): the whole pipeline, from a 202 at the gateway to the signed webhook at the
// company, with every service as a process (simulator, client-registry, both senders, dispatcher,
// gateway) on one broker and one PostgreSQL. Many companies, each with a Telegram bot that many people
// started and shared their contact with (through the simulator and the sender's real update path), so the
// simulator's Telegram limits (30 messages/s per bot, 1/s per chat) leave room for the rates offered.
// Sends are offered open loop (on a fixed schedule whatever the answers do), so a slow pipeline shows as
// latency rather than as a slower load.
//
// 1. Latency: each of BENCH_LATENCY_RATES sends/s (100,500) for BENCH_LATENCY_S seconds (30), after a
//    BENCH_WARMUP_S (10) warm-up; percentiles of accept (202) -> webhook arrival, a breakdown by stage from
//    the events' own timestamps, and the work per message: CPU of every process, PostgreSQL transactions
//    and rows, Kafka produce requests and handler batches.
// 2. Throughput: offered rates BENCH_STEPS (250,500,1000 /s), BENCH_STEP_S seconds (20) each: accepted and
//    delivered per second and whether the backlog grows; then the drain (at most BENCH_DRAIN_S, 45).
// BENCH_COMPANIES (50) and BENCH_PEOPLE (40, each linked to every company's bot) set the audience;
// BENCH_PROFILE_DIR (+ BENCH_PROFILE=<service>|all) writes --cpu-prof profiles. Loopback only, bounded
// (BENCH_MAX_S, 600, stops everything).
import { topics, type Complete, type DeliveryEvent, type MessageEvent } from '@mds/contracts';
import { createKafkaClient, readToEnd } from '@mds/kafka';
import { collectEvents } from '@mds/kafka/testing';
import { createLogger } from '@mds/logging';
import { percentile } from '@mds/message-state';
import { Pool } from 'undici';
import { startDeliveryStack, type SimulatedPerson } from '../src/sandbox.js';
import { BenchReceiver, Ledger, offerLoad, summary, type SendRecord, type Target } from './load.js';
import { databaseCounters, metricSum, printDatabase } from './database.js';
import { findKafka, findPostgres, ProcessSampler, type Usage, type Watched } from './processes.js';

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const COMPANIES = Number(env('BENCH_COMPANIES', '50'));
const PEOPLE = Number(env('BENCH_PEOPLE', '40'));
const WARMUP_S = Number(env('BENCH_WARMUP_S', '10'));
const LATENCY_RATES = env('BENCH_LATENCY_RATES', '100,500').split(',').filter(Boolean).map(Number);
const LATENCY_S = Number(env('BENCH_LATENCY_S', '30'));
const STEPS = env('BENCH_STEPS', '250,500,1000').split(',').filter(Boolean).map(Number);
const STEP_S = Number(env('BENCH_STEP_S', '20'));
const DRAIN_S = Number(env('BENCH_DRAIN_S', '45'));
const MAX_IN_FLIGHT = 4_000;
const MAX_S = Number(env('BENCH_MAX_S', '600'));
const SERVICES = [
  'messenger-simulator',
  'client-registry',
  'telegram-sender',
  'max-sender',
  'webhook-dispatcher',
  'gateway',
];
/** BENCH_PROFILE_DIR=/tmp/prof writes a --cpu-prof profile of BENCH_PROFILE (a service name, or "all"). */
const profile = (service: string): Record<string, string> =>
  process.env.BENCH_PROFILE_DIR && [service, 'all'].includes(env('BENCH_PROFILE', 'all'))
    ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}` }
    : {};

process.env.E2E_LOG_LEVEL ??= 'warn';
const started = performance.now();
const say = (line: string) =>
  console.log(`[${((performance.now() - started) / 1000).toFixed(0).padStart(3)} s] ${line}`);

const ledger = new Ledger();
const receiver = await new BenchReceiver(ledger).start();
const { stack, sandbox } = await startDeliveryStack({
  env: {
    gateway: {
      RATE_LIMIT_SEND_PER_KEY: '1000000',
      RATE_LIMIT_SEND_PER_COMPANY: '1000000',
      API_KEY_CACHE_TTL_MS: '30000',
      ...profile('gateway'),
    },
    // Production defaults where the sandbox shortens them for tests.
    'webhook-dispatcher': {
      WEBHOOK_ENDPOINT_CACHE_TTL_MS: '5000',
      WEBHOOK_POLL_INTERVAL_MS: env('BENCH_WEBHOOK_POLL_INTERVAL_MS', '500'),
      ...profile('webhook-dispatcher'),
    },
    'client-registry': profile('client-registry'),
    // The production long-poll wait (the sandbox shortens it): 50 bots polling every second cost CPU.
    'telegram-sender': { UPDATES_POLL_TIMEOUT_S: '25', ...profile('telegram-sender') },
    'max-sender': { UPDATES_POLL_TIMEOUT_S: '25', ...profile('max-sender') },
    'messenger-simulator': profile('messenger-simulator'),
  },
});
const pool = new Pool(sandbox.gatewayUrl, {
  connections: 256,
  pipelining: 1,
  headersTimeout: 30_000,
  bodyTimeout: 30_000,
});
let stopping: Promise<void> | undefined;
const shutdown = () =>
  (stopping ??= Promise.allSettled([pool.close(), receiver.close()]).then(() => stack.stop()));
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void shutdown().finally(() => process.exit(130)));
const watchdog = setTimeout(() => {
  console.error(`the benchmark ran longer than BENCH_MAX_S (${MAX_S} s); stopping it`);
  void shutdown().finally(() => process.exit(1));
}, MAX_S * 1000);
const quiet = createLogger({ service: 'pipeline-bench', level: 'silent' });
const brokers = stack.infra.kafkaBrokers.split(',');

function watchedProcesses(): Watched[] {
  const watched: Watched[] = SERVICES.map((name) => ({ name, pid: stack.service(name).pid! }));
  const kafka = findKafka(Number(brokers[0]!.split(':').at(-1)));
  if (kafka) watched.push({ name: 'kafka broker', pid: kafka });
  const pg = findPostgres(Number(new URL(stack.databaseUrl).port));
  if (pg) watched.push({ name: 'postgresql', pid: pg, withChildren: true });
  watched.push({ name: 'bench (load + receiver)', pid: process.pid });
  return watched;
}

/**
 * CPU share and RSS of each process between two samples, and its CPU time per webhook delivered meanwhile:
 * the figure least moved by other load on the machine (2 cores give 2,000 ms of CPU per second).
 */
function printUsage(
  label: string,
  before: ReturnType<ProcessSampler['sample']>,
  after: ReturnType<ProcessSampler['sample']>,
  delivered: number,
) {
  const usage: Usage[] = ProcessSampler.between(before, after);
  const seconds = (after.at - before.at) / 1000;
  const perMessage = (u: Usage) => (delivered > 0 ? (u.cpuPercent * seconds * 10) / delivered : NaN);
  const total = usage.reduce((sum, u) => sum + u.cpuPercent, 0);
  const totalPerMessage = usage
    .filter((u) => !u.name.startsWith('bench'))
    .reduce((sum, u) => sum + perMessage(u), 0);
  console.log(
    `  CPU (% of one core), CPU ms per webhook delivered (${delivered} in ${seconds.toFixed(0)} s), RSS; ${label}:`,
  );
  for (const u of [...usage].sort((a, b) => b.cpuPercent - a.cpuPercent))
    console.log(
      `    ${u.name.padEnd(24)} ${u.cpuPercent.toFixed(0).padStart(4)} %  ${(delivered > 0 ? perMessage(u).toFixed(2) : '-').padStart(6)} ms  ${u.rssMb.toFixed(0).padStart(5)} MB`,
    );
  console.log(
    `    all together ${total.toFixed(0)} % of 200 %` +
      (delivered > 0
        ? `; the stack (bench excluded) ${totalPerMessage.toFixed(2)} ms of CPU per message` +
          ` = at most ${(2000 / totalPerMessage).toFixed(0)} messages/s on 2 otherwise idle cores`
        : ''),
  );
}

async function inParallel<T, R>(items: T[], limit: number, work: (item: T, i: number) => Promise<R>) {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!, i);
      }
    }),
  );
  return results;
}

/** Waits until every send of `records` has its webhook, or `seconds` pass; answers how many are missing. */
async function drain(records: () => SendRecord[], seconds: number): Promise<number> {
  const deadline = performance.now() + seconds * 1000;
  for (;;) {
    const missing = records().filter((r) => r.webhookAt === undefined).length;
    if (missing === 0 || performance.now() > deadline) return missing;
    await new Promise((r) => setTimeout(r, 250));
  }
}

const body = (target: Target) =>
  JSON.stringify({
    phone_number: target.phone,
    text: 'Your order 42 is ready for pickup',
    service: 'telegram',
    buttons: [{ text: 'Track', url: 'https://example.com/t/42' }],
  });

try {
  say(
    `stack up (${SERVICES.length} services, broker ${stack.infra.kafkaBrokers}); creating ${COMPANIES} companies, ${PEOPLE} people`,
  );
  const links = await collectEvents({ brokers, topic: topics.client, topicPrefix: stack.topicPrefix });
  const companies = await inParallel(
    Array.from({ length: COMPANIES }, (_, i) => i),
    8,
    async (i) => {
      const company = await sandbox.company(`Bench ${i}`, `${receiver.url}/c/${i}`);
      receiver.secretsOf(i, company.secrets[0]!);
      const bot = await sandbox.bot(company.companyId, 'telegram', `bench${i}`);
      return { ...company, bot };
    },
  );
  const phones = Array.from({ length: PEOPLE }, (_, i) => `7916${String(3_000_000 + i).padStart(7, '0')}`);
  const people: SimulatedPerson[] = await inParallel(phones, 8, (phone, i) =>
    sandbox.person(phone, `Bench${i}`),
  );
  const pairs = companies.flatMap((c) => people.map((p) => ({ bot: c.bot, person: p })));
  await inParallel(pairs, 16, ({ bot, person }) => sandbox.startAndShareContact(person, bot));
  const linkedBy = performance.now() + 120_000;
  const linked = () => links.events.filter((e) => e.event.$case === 'clientLinked').length;
  while (linked() < pairs.length) {
    if (performance.now() > linkedBy)
      throw new Error(`only ${linked()} of ${pairs.length} people linked after 120 s`);
    await new Promise((r) => setTimeout(r, 250));
  }
  await links.stop();
  say(`${pairs.length} links (person started the bot, shared contact, sender -> registry)`);

  // Company-major order over people: consecutive sends go to different bots, and one chat (bot, person)
  // gets rate / (companies x people) sends per second.
  const targets: Target[] = phones.flatMap((phone) => companies.map((c) => ({ apiKey: c.apiKey, phone })));
  const sampler = new ProcessSampler(watchedProcesses());
  const snap = () => ({ ...sampler.sample(), delivered: ledger.delivered });
  const load = (phase: string, rate: number, seconds: number) =>
    offerLoad({ pool, ledger, phase, rate, seconds, targets, maxInFlight: MAX_IN_FLIGHT, body });
  const reportLoad = (phase: string, r: Awaited<ReturnType<typeof load>>) => {
    const refused = [...ledger.refused].map(([reason, n]) => `${n}x ${reason}`).join('; ');
    if (r.skipped > 0 || refused)
      console.log(`  ${phase}: generator skipped ${r.skipped}; refused so far: ${refused || 'none'}`);
  };

  const idle0 = snap();
  await new Promise((r) => setTimeout(r, 5_000));
  printUsage('idle (5 s, no sends: polling, heartbeats, lease renewals)', idle0, snap(), 0);

  say(`warm-up: ${LATENCY_RATES[0]}/s for ${WARMUP_S} s`);
  const warm = await load('warmup', LATENCY_RATES[0]!, WARMUP_S);
  await warm.answered;
  reportLoad('warm-up', warm);
  await drain(() => ledger.of('warmup'), 30);

  const counters = async () => {
    const sim = stack.service('messenger-simulator').url;
    const tg = stack.service('telegram-sender').url;
    const kafka = new Map<string, number[]>();
    for (const name of SERVICES.filter((n) => n !== 'messenger-simulator')) {
      const url = stack.service(name).url;
      kafka.set(
        name,
        await Promise.all([
          metricSum(url, 'mds_event_publish_batch_size_count'),
          metricSum(url, 'mds_event_publish_batch_size_sum'),
          metricSum(url, 'mds_event_handler_seconds_count'),
          metricSum(url, 'mds_events_consumed_total'),
        ]),
      );
    }
    return {
      calls: await metricSum(sim, 'mds_simulator_api_calls_total'),
      tooMany: await metricSum(sim, 'mds_simulator_api_calls_total', 'status="429"'),
      attempts: await metricSum(tg, 'mds_sender_attempts_total'),
      kafka,
    };
  };

  // Phase 1: latency at fixed rates.
  const p99s: { rate: number; p99: number }[] = [];
  for (const rate of LATENCY_RATES) {
    const phase = `latency-${rate}`;
    say(`phase 1: ${rate}/s for ${LATENCY_S} s (open loop)`);
    const from = new Date(Date.now() - 1_000);
    const db0 = await databaseCounters(stack.databaseUrl);
    const c0 = await counters();
    const before = snap();
    const offered = await load(phase, rate, LATENCY_S);
    await offered.answered;
    reportLoad(phase, offered);
    // CPU and database work are counted until the phase's last webhook, so they divide by its messages.
    const missing = await drain(() => ledger.of(phase), 30);
    const after = snap();
    const db1 = await databaseCounters(stack.databaseUrl);
    const c1 = await counters();
    const records = ledger.of(phase);
    const done = records.filter((r) => r.webhookAt !== undefined);
    const acceptedSpan =
      (Math.max(...records.map((r) => r.acceptedAt)) - Math.min(...records.map((r) => r.acceptedAt))) / 1000;
    const latencies = done.map((r) => r.webhookAt! - r.acceptedAt).sort((a, b) => a - b);
    p99s.push({ rate, p99: percentile(latencies, 99) });
    console.log(
      `\nPhase 1: ${rate} sends/s offered for ${LATENCY_S} s, ${COMPANIES} companies x ${PEOPLE} people`,
    );
    console.log(
      `  accepted ${records.length} (${(records.length / acceptedSpan).toFixed(0)}/s), webhooks ${done.length}, missing after 30 s ${missing}, ` +
        `states ${JSON.stringify(Object.fromEntries(countBy(done.map((r) => r.state ?? '?'))))}`,
    );
    console.log(`  accept (202) -> webhook:      ${summary(latencies)}   (target p99 <= 500 at 500/s)`);
    console.log(`  scheduled send -> webhook:    ${summary(done.map((r) => r.webhookAt! - r.intendedAt))}`);
    console.log(
      `  scheduled send -> 202:        ${summary(records.map((r) => r.acceptedAt - r.intendedAt))}`,
    );
    const n = after.delivered - before.delivered;
    printUsage(`phase 1 at ${rate}/s, until its last webhook`, before, after, n);
    printDatabase(db0, db1, n);
    console.log('  Kafka per message: produce requests (records each), handler batches (events each):');
    for (const [name, [requests, records, batches, consumed]] of c1.kafka) {
      const [r0, rec0, b0, con0] = c0.kafka.get(name)!;
      const each = (a: number, b: number) => (b > 0 ? (a / b).toFixed(1) : '-');
      console.log(
        `    ${name.padEnd(20)} produce ${((requests! - r0!) / n).toFixed(2)} (${each(records! - rec0!, requests! - r0!)})` +
          `   handle ${((batches! - b0!) / n).toFixed(2)} (${each(consumed! - con0!, batches! - b0!)})`,
      );
    }
    console.log(
      `  simulator: ${c1.calls - c0.calls} Bot API calls (updates polling included), ${c1.tooMany - c0.tooMany} answered 429; ` +
        `telegram-sender: ${c1.attempts - c0.attempts} send attempts`,
    );
    await breakdown(from, ledger, phase);
  }

  // Phase 2: step the offered rate up.
  console.log(`\nPhase 2: offered rate in steps of ${STEP_S} s; delivered = webhooks with a status arriving`);
  const steps: { rate: number; accepted: number; delivered: number; growth: number; skipped: number }[] = [];
  for (const rate of STEPS) {
    const phase = `step-${rate}`;
    const a0 = ledger.accepted;
    const d0 = ledger.delivered;
    const backlogStart = ledger.backlog;
    const before = snap();
    const r = await load(phase, rate, STEP_S);
    const after = snap();
    // Over the step's schedule only; its unanswered sends finish during the next step or the drain.
    const seconds = (after.at - before.at) / 1000;
    const accepted = (ledger.accepted - a0) / seconds;
    const delivered = (ledger.delivered - d0) / seconds;
    const backlogEnd = ledger.backlog;
    const growth = (backlogEnd - backlogStart) / seconds;
    steps.push({ rate, accepted, delivered, growth, skipped: r.skipped });
    console.log(
      `  offered ${String(rate).padStart(5)}/s: accepted ${accepted.toFixed(0).padStart(5)}/s, delivered ${delivered.toFixed(0).padStart(5)}/s, ` +
        `backlog (sent, no webhook yet) ${backlogStart} -> ${backlogEnd} (${growth >= 0 ? '+' : ''}${growth.toFixed(0)}/s)`,
    );
    reportLoad(phase, r);
    printUsage(`offered ${rate}/s`, before, after, after.delivered - before.delivered);
  }
  const d0 = ledger.delivered;
  const t0 = performance.now();
  const backlog = ledger.backlog;
  const before = snap();
  const left = await drain(() => [...ledger.sends.values()], DRAIN_S);
  const unanswered = ledger.fired - ledger.accepted - [...ledger.refused.values()].reduce((a, b) => a + b, 0);
  const after = snap();
  const drainSeconds = (performance.now() - t0) / 1000;
  console.log(
    `  drain: backlog ${backlog} delivered at ${((ledger.delivered - d0) / drainSeconds).toFixed(0)}/s over ${drainSeconds.toFixed(0)} s` +
      `, ${left} accepted still without a webhook, ${unanswered} sends still unanswered`,
  );
  printUsage('drain (no new sends)', before, after, after.delivered - before.delivered);

  // Sustained: the gateway took (nearly) all that was offered and the backlog did not grow.
  const sustained = steps.filter(
    (s) => s.skipped === 0 && s.accepted >= s.rate * 0.95 && s.growth < s.rate * 0.05,
  );
  const best = sustained.at(-1);
  console.log(
    `\nSummary: p99 accept -> webhook ${p99s.map((x) => `at ${x.rate}/s ${x.p99.toFixed(0)} ms`).join(', ')} (target <= 500 ms at 500/s); ` +
      `highest offered rate sustained (>= 95 % accepted, backlog growing < 5 % of it): ${best ? `${best.rate}/s (delivered ${best.delivered.toFixed(0)}/s)` : 'none of the steps'}; ` +
      `most delivered in a step ${Math.max(...steps.map((s) => s.delivered)).toFixed(0)}/s (target >= 1000/s sustained)`,
  );
  console.log(
    `  totals: accepted ${ledger.accepted}, delivered ${ledger.delivered}, duplicate webhooks ${ledger.duplicates}, ` +
      `signatures verified ${receiver.verified} (one webhook in 50), bad ${receiver.badSignatures}`,
  );
} finally {
  clearTimeout(watchdog);
  await shutdown();
}

function countBy(values: string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

/**
 * Where the time of phase 1 went, from the events' own timestamps (every process reads the same clock):
 * MessageAccepted.occurred_at (gateway, before publishing), DeliveryRequested.occurred_at (registry, when
 * its batch began routing), MessageSent.sent_at (sender, the provider's answer), then the 202 and the
 * webhook's arrival at the bench.
 */
async function breakdown(from: Date, l: Ledger, phase: string): Promise<void> {
  const accepted = new Map<string, number>();
  const routed = new Map<string, number>();
  const sent = new Map<string, number>();
  const kafka = createKafkaClient({ brokers, clientId: 'pipeline-bench' }, quiet);
  await readToEnd<MessageEvent | DeliveryEvent>({
    kafka,
    logger: quiet,
    topics: [topics.message, topics.deliveryTelegram],
    topicPrefix: stack.topicPrefix,
    from,
    handleBatch: (events) => {
      for (const { record } of events as { record: Complete<MessageEvent> | Complete<DeliveryEvent> }[]) {
        const e = record.event;
        const at = record.metadata.occurredAt?.getTime() ?? NaN;
        if (e.$case === 'messageAccepted') accepted.set(record.metadata.streamId, at);
        else if (e.$case === 'deliveryRequested') routed.set(e.value.messageId, at);
        else if (e.$case === 'messageSent')
          sent.set(record.metadata.streamId, e.value.sentAt?.getTime() ?? at);
      }
      return Promise.resolve();
    },
  });
  const stages = {
    'MessageAccepted -> 202 at the client': [] as number[],
    'MessageAccepted -> registry routes it': [] as number[],
    'routing -> simulator answered sender': [] as number[],
    'simulator answered -> webhook arrives': [] as number[],
  };
  for (const [id, r] of l.sends) {
    if (r.phase !== phase || r.webhookAt === undefined) continue;
    const a = accepted.get(id);
    const ro = routed.get(id);
    const s = sent.get(id);
    if (a === undefined || ro === undefined || s === undefined) continue;
    stages['MessageAccepted -> 202 at the client'].push(r.acceptedAt - a);
    stages['MessageAccepted -> registry routes it'].push(ro - a);
    stages['routing -> simulator answered sender'].push(s - ro);
    stages['simulator answered -> webhook arrives'].push(r.webhookAt - s);
  }
  console.log("  stages (from the events' own timestamps, ms):");
  for (const [stage, values] of Object.entries(stages))
    console.log(`    ${stage.padEnd(38)} ${summary(values)}`);
}
