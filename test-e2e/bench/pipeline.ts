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
// 2. Throughput: offered rates BENCH_STEPS ("rate:seconds", 250:20,500:20,1000:60): accepted and delivered per
//    second and whether the backlog grows; then a burst (BENCH_BURST, 3000:10) over capacity and the drain of
//    the backlog it leaves (at most BENCH_DRAIN_S, 60).
// 0. The floor (bench/floor.ts): the same Kafka hops as a bare kafkajs chain with the same HTTP calls, at the
//    latency rates for BENCH_FLOOR_S (15) each; phase 1 prints its figures as ratios to the floor's.
// Last, one line per target of the pipeline-speed issue: met or not met, in this run.
// BENCH_COMPANIES (100, each with a Telegram bot: 30 messages/s each at most) and BENCH_PEOPLE (40, each
// linked to every company's bot) set the audience; BENCH_PROFILE_DIR (+ BENCH_PROFILE=<service>|all) writes
// --cpu-prof profiles. Loopback only, bounded (BENCH_MAX_S, 1200, stops everything).
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
import { measureFloor } from './floor.js';

const env = (name: string, fallback: string) => process.env[name] ?? fallback;
const COMPANIES = Number(env('BENCH_COMPANIES', '100'));
const PEOPLE = Number(env('BENCH_PEOPLE', '40'));
const WARMUP_S = Number(env('BENCH_WARMUP_S', '10'));
const LATENCY_RATES = env('BENCH_LATENCY_RATES', '100,500').split(',').filter(Boolean).map(Number);
const LATENCY_S = Number(env('BENCH_LATENCY_S', '30'));
/** "rate:seconds" pairs. */
const pairs = (value: string) =>
  value
    .split(',')
    .filter(Boolean)
    .map((p) => {
      const [rate, seconds] = p.split(':').map(Number);
      return { rate: rate!, seconds: seconds! };
    });
const STEPS = pairs(env('BENCH_STEPS', '250:20,500:20,1000:60'));
const BURST = pairs(env('BENCH_BURST', '3000:10'))[0];
const DRAIN_S = Number(env('BENCH_DRAIN_S', '60'));
const FLOOR_S = Number(env('BENCH_FLOOR_S', '15'));
const MAX_IN_FLIGHT = 8_000;
const MAX_S = Number(env('BENCH_MAX_S', '1200'));
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
  // The dashboard folds the log too, but is no stage of 202 -> webhook.
  without: ['dashboard'],
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
): { stackPercent: number; stackMsPerMessage: number } {
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
  const stackPercent = usage
    .filter((u) => !u.name.startsWith('bench'))
    .reduce((sum, u) => sum + u.cpuPercent, 0);
  return { stackPercent, stackMsPerMessage: totalPerMessage };
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
  const idle = printUsage('idle (5 s, no sends: polling, heartbeats, lease renewals)', idle0, snap(), 0);

  say(`floor: the same hops as a bare kafkajs chain, ${LATENCY_RATES.join(' and ')}/s for ${FLOOR_S} s`);
  const sim = stack.service('messenger-simulator');
  const floor = await measureFloor({
    brokers,
    simulatorUrl: `${sim.url}/bot${companies[0]!.bot.token}/getMe`,
    receiverUrl: `${receiver.url}/floor`,
    rates: LATENCY_RATES,
    seconds: FLOOR_S,
    partitions: topics.message.partitions,
    also: watchedProcesses().filter((w) => w.name === 'kafka broker' || w.name === 'messenger-simulator'),
    say,
  });
  for (const f of floor)
    console.log(
      `  floor at ${f.rate}/s: 202-equivalent -> receiver ${summary(f.latencies)}; CPU ${f.cpuPerMessage.toFixed(2)} ms per message (hops, broker, simulator)`,
    );

  say(`warm-up: ${LATENCY_RATES[0]}/s for ${WARMUP_S} s`);
  const warm = await load('warmup', LATENCY_RATES[0]!, WARMUP_S);
  await warm.answered;
  reportLoad('warm-up', warm);
  await drain(() => ledger.of('warmup'), 30);

  const counters = async () => {
    const simUrl = stack.service('messenger-simulator').url;
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
          metricSum(url, 'mds_kafka_fetches_total'),
          metricSum(url, 'mds_kafka_offset_commits_total'),
        ]),
      );
    }
    return {
      calls: await metricSum(simUrl, 'mds_simulator_api_calls_total'),
      tooMany: await metricSum(simUrl, 'mds_simulator_api_calls_total', 'status="429"'),
      attempts: await metricSum(tg, 'mds_sender_attempts_total'),
      kafka,
    };
  };

  // Phase 1: latency at fixed rates.
  const latency = new Map<number, { p50: number; p99: number; cpu: number; tx: number; rows: number }>();
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
    console.log(
      `\nPhase 1: ${rate} sends/s offered for ${LATENCY_S} s, ${COMPANIES} companies x ${PEOPLE} people`,
    );
    console.log(
      `  accepted ${records.length} (${(records.length / acceptedSpan).toFixed(0)}/s), webhooks ${done.length}, missing after 30 s ${missing}, ` +
        `states ${JSON.stringify(Object.fromEntries(countBy(done.map((r) => r.state ?? '?'))))}`,
    );
    console.log(`  accept (202) -> webhook:      ${summary(latencies)}`);
    console.log(`  scheduled send -> webhook:    ${summary(done.map((r) => r.webhookAt! - r.intendedAt))}`);
    console.log(
      `  scheduled send -> 202:        ${summary(records.map((r) => r.acceptedAt - r.intendedAt))}`,
    );
    const n = after.delivered - before.delivered;
    const usage = printUsage(`phase 1 at ${rate}/s, until its last webhook`, before, after, n);
    const db = printDatabase(db0, db1, n);
    console.log(
      '  Kafka per message: produce requests (records each), handler batches (events each), fetches, offset commits:',
    );
    let requests = 0;
    for (const [name, [prods, recs, batches, consumed, fetches, commits]] of c1.kafka) {
      const [p0, r0, b0, con0, f0, k0] = c0.kafka.get(name)!;
      const each = (a: number, b: number) => (b > 0 ? (a / b).toFixed(1) : '-');
      const per = (a: number) => (a / n).toFixed(2);
      requests += prods! - p0! + (fetches! - f0!) + (commits! - k0!);
      console.log(
        `    ${name.padEnd(20)} produce ${per(prods! - p0!)} (${each(recs! - r0!, prods! - p0!)})` +
          `   handle ${per(batches! - b0!)} (${each(consumed! - con0!, batches! - b0!)})` +
          `   fetch ${per(fetches! - f0!)}   commit ${per(commits! - k0!)}`,
      );
    }
    console.log(`    all services: ${(requests / n).toFixed(1)} Kafka requests per message`);
    console.log(
      `  simulator: ${c1.calls - c0.calls} Bot API calls (updates polling included), ${c1.tooMany - c0.tooMany} answered 429; ` +
        `telegram-sender: ${c1.attempts - c0.attempts} send attempts`,
    );
    await breakdown(from, ledger, phase);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    const f = floor.find((x) => x.rate === rate);
    if (f) {
      const fl = [...f.latencies].sort((a, b) => a - b);
      console.log(
        `  against the floor at ${rate}/s: latency p50 ${(p50 / percentile(fl, 50)).toFixed(1)}x, p99 ${(p99 / percentile(fl, 99)).toFixed(1)}x; ` +
          `CPU per message ${(usage.stackMsPerMessage / f.cpuPerMessage).toFixed(1)}x (the stack also runs the gateway's HTTP, PostgreSQL and the read model)`,
      );
    }
    latency.set(rate, { p50, p99, cpu: usage.stackMsPerMessage, tx: db.transactions, rows: db.rows });
  }

  // Phase 2: step the offered rate up.
  console.log(`\nPhase 2: offered rates in steps; delivered = webhooks with a status arriving`);
  const steps: { rate: number; accepted: number; delivered: number; growth: number; skipped: number }[] = [];
  for (const { rate, seconds: stepSeconds } of STEPS) {
    const phase = `step-${rate}`;
    const a0 = ledger.accepted;
    const d0 = ledger.delivered;
    const backlogStart = ledger.backlog;
    const before = snap();
    const r = await load(phase, rate, stepSeconds);
    const after = snap();
    // Over the step's schedule only; its unanswered sends finish during the next step or the drain.
    const seconds = (after.at - before.at) / 1000;
    const accepted = (ledger.accepted - a0) / seconds;
    const delivered = (ledger.delivered - d0) / seconds;
    const backlogEnd = ledger.backlog;
    const growth = (backlogEnd - backlogStart) / seconds;
    steps.push({ rate, accepted, delivered, growth, skipped: r.skipped });
    console.log(
      `  offered ${String(rate).padStart(5)}/s for ${stepSeconds} s: accepted ${accepted.toFixed(0).padStart(5)}/s, delivered ${delivered.toFixed(0).padStart(5)}/s, ` +
        `backlog (sent, no webhook yet) ${backlogStart} -> ${backlogEnd} (${growth >= 0 ? '+' : ''}${growth.toFixed(0)}/s)`,
    );
    reportLoad(phase, r);
    printUsage(`offered ${rate}/s`, before, after, after.delivered - before.delivered);
  }
  await drain(() => [...ledger.sends.values()], DRAIN_S);

  // A burst over capacity leaves a backlog; its drain is measured from the burst's end until it is gone.
  let drainRate = NaN;
  if (BURST) {
    say(`burst: ${BURST.rate}/s for ${BURST.seconds} s, then the drain of what it leaves`);
    const r = await load('burst', BURST.rate, BURST.seconds);
    await r.answered;
    reportLoad('burst', r);
    const backlog = ledger.backlog;
    const d0 = ledger.delivered;
    const t0 = performance.now();
    const before = snap();
    await drain(() => [...ledger.sends.values()], DRAIN_S);
    const after = snap();
    const drainSeconds = (performance.now() - t0) / 1000;
    drainRate = (ledger.delivered - d0) / drainSeconds;
    console.log(
      `  burst: accepted ${ledger.of('burst').length} of ${r.offered}; drain: backlog ${backlog} delivered at ${drainRate.toFixed(0)}/s over ${drainSeconds.toFixed(1)} s`,
    );
    printUsage('drain (no new sends)', before, after, after.delivered - before.delivered);
  }
  const unanswered = ledger.fired - ledger.accepted - [...ledger.refused.values()].reduce((a, b) => a + b, 0);
  const lost = [...ledger.sends.values()].filter((r) => r.webhookAt === undefined).length;
  console.log(
    `\n  totals: accepted ${ledger.accepted}, delivered ${ledger.delivered}, without a webhook ${lost}, unanswered ${unanswered}, ` +
      `duplicate webhooks ${ledger.duplicates}, signatures verified ${receiver.verified} (one webhook in 50), bad ${receiver.badSignatures}`,
  );

  // The targets of the pipeline-speed issue, met or not in this run.
  const at100 = latency.get(100);
  const at500 = latency.get(500);
  const thousand = steps.find((x) => x.rate === 1000);
  const goals: [string, string, boolean][] = [
    [
      '100/s: p50 / p99 <= 50 / 150 ms',
      at100 ? `${at100.p50.toFixed(0)} / ${at100.p99.toFixed(0)} ms` : '-',
      !!at100 && at100.p50 <= 50 && at100.p99 <= 150,
    ],
    ['500/s: p99 <= 500 ms', at500 ? `${at500.p99.toFixed(0)} ms` : '-', !!at500 && at500.p99 <= 500],
    [
      'offered 1,000/s: >= 99 % accepted, >= 1,000/s delivered, backlog flat',
      thousand
        ? `${((100 * thousand.accepted) / 1000).toFixed(1)} %, ${thousand.delivered.toFixed(0)}/s, ${thousand.growth >= 0 ? '+' : ''}${thousand.growth.toFixed(0)}/s`
        : '-',
      !!thousand && thousand.accepted >= 990 && thousand.delivered >= 990 && thousand.growth < 10,
    ],
    ['drain of a backlog >= 2,000/s', `${drainRate.toFixed(0)}/s`, drainRate >= 2000],
    [
      'stack CPU per message at 100/s <= 2 ms',
      at100 ? `${at100.cpu.toFixed(2)} ms` : '-',
      !!at100 && at100.cpu <= 2,
    ],
    [
      'stack CPU per message at 500/s <= 1.0 ms',
      at500 ? `${at500.cpu.toFixed(2)} ms` : '-',
      !!at500 && at500.cpu <= 1,
    ],
    [
      'PostgreSQL transactions per message at 100/s <= 1',
      at100 ? at100.tx.toFixed(2) : '-',
      !!at100 && at100.tx <= 1,
    ],
    [
      'PostgreSQL rows written per message <= 5 (100/s)',
      at100 ? at100.rows.toFixed(1) : '-',
      !!at100 && at100.rows <= 5,
    ],
    ['idle stack <= 10 % of one core', `${idle.stackPercent.toFixed(0)} %`, idle.stackPercent <= 10],
    [
      'lost / duplicate webhooks 0 / 0',
      `${lost} / ${ledger.duplicates}`,
      lost === 0 && ledger.duplicates === 0,
    ],
  ];
  console.log('\nTargets (issue: pipeline at the speed of the hardware), this run:');
  for (const [what, figure, met] of goals)
    console.log(`  ${met ? 'met    ' : 'NOT MET'}  ${what.padEnd(72)} ${figure}`);
  console.log(`  ${goals.filter((t) => t[2]).length} of ${goals.length} met`);
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
