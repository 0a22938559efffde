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
//    the events' own timestamps, and the work per message: CPU of every process, PostgreSQL transactions,
//    rows and table scans, Kafka produce requests, handler batches, fetches, commits and all requests.
// 2. Throughput: offered rates BENCH_STEPS ("rate:seconds", 250:20,500:20,1000:60): accepted and delivered per
//    second and whether the backlog grows; then a burst (BENCH_BURST, 3000:10) over capacity and the drain of
//    the backlog it leaves (at most BENCH_DRAIN_S, 60).
// 0. The idle stack: each process's CPU over BENCH_IDLE_S (20) with no sends, and the Kafka requests and
//    PostgreSQL work it does meanwhile. The floor (bench/floor.ts): the same Kafka hops as a bare kafkajs chain with the same HTTP calls, at the
//    latency rates for BENCH_FLOOR_S (15) each; phase 1 prints its figures as ratios to the floor's.
// Every counter comes from the services' ops ports and PostgreSQL's statistics (src/pipeline/readings.ts);
// one missing, or not moving while messages go through, ends the run with exit code 1, naming it and its URL.
// Last, one line per target of the issue "speed that stays": met or not met, in this run.
// BENCH_COMPANIES (100, each with a Telegram bot: 30 messages/s each at most) and BENCH_PEOPLE (40, each
// linked to every company's bot) set the audience; BENCH_PROFILE_DIR (+ BENCH_PROFILE=<service>|all) writes
// --cpu-prof profiles. Loopback only, bounded (BENCH_MAX_S, 1200, stops everything).
import { topics, type Complete, type DeliveryEvent, type MessageEvent, deliveryTopic } from '@mds/contracts';
import { createKafkaClient, readToEnd } from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { percentile } from '@mds/message-state';
import { Pool } from 'undici';
import { startDeliveryStack } from '../src/sandbox.js';
import { createAudience } from '../src/pipeline/audience.js';
import {
  BenchReceiver,
  describeRefusals,
  Ledger,
  offerLoad,
  summary,
  type SendRecord,
  type Target,
} from '../src/pipeline/load.js';
import { printDatabase } from '../src/pipeline/database.js';
import {
  PIPELINE_SERVICES,
  PRODUCTION_TIMINGS,
  printKafkaWork,
  readPipeline,
  workBetween,
  type Reading,
} from '../src/pipeline/readings.js';
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
const IDLE_S = Number(env('BENCH_IDLE_S', '20'));
const SERVICES = PIPELINE_SERVICES;
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
  // Production's timings where the sandbox shortens them for tests; the bench's companies send far more than
  // a company's default rate limit allows.
  env: Object.fromEntries(
    SERVICES.map((name) => [
      name,
      {
        ...PRODUCTION_TIMINGS[name],
        ...(name === 'gateway'
          ? { RATE_LIMIT_SEND_PER_KEY: '1000000', RATE_LIMIT_SEND_PER_COMPANY: '1000000' }
          : {}),
        ...profile(name),
      },
    ]),
  ),
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
  const { targets, companies } = await createAudience({
    stack,
    sandbox,
    receiver,
    companies: COMPANIES,
    people: PEOPLE,
  });
  say(`${targets.length} links (person started the bot, shared contact, sender -> registry)`);
  const sampler = new ProcessSampler(watchedProcesses());
  const snap = () => ({ ...sampler.sample(), delivered: ledger.delivered });
  const load = (phase: string, rate: number, seconds: number) =>
    offerLoad({ pool, ledger, phase, rate, seconds, targets, maxInFlight: MAX_IN_FLIGHT, body });
  /** What the generator could not send, and every refusal of the phase (429s first of all: they must be 0). */
  const reportLoad = (phase: string, r: Awaited<ReturnType<typeof load>>) => {
    console.log(
      `  ${phase}: 429s ${ledger.tooManyOf(phase)}; refused ${describeRefusals(ledger.refusedOf(phase))}; generator skipped ${r.skipped}`,
    );
  };

  // The idle stack: what polling, heartbeats, idle fetches and timers cost with no sends at all (after the
  // registry has relayed what the links left in its outbox).
  await new Promise((r) => setTimeout(r, 15_000));
  const idle0 = snap();
  const idleReading0 = await readPipeline(stack);
  await new Promise((r) => setTimeout(r, IDLE_S * 1000));
  const idle = printUsage(
    `idle (${IDLE_S} s, no sends: polling, heartbeats, idle fetches, timers)`,
    idle0,
    snap(),
    0,
  );
  const idleReading1 = await readPipeline(stack);
  console.log(
    '  Kafka requests per second idle: ' +
      [...idleReading1.kafka]
        .map(([name, k]) => {
          const before = idleReading0.kafka.get(name)!;
          const perS = (n: number) => (n / IDLE_S).toFixed(1);
          return `${name} ${perS(k.kafkaRequests - before.kafkaRequests)} (${perS(k.fetches - before.fetches)} fetches)`;
        })
        .join(', ') +
      `; PostgreSQL ${((idleReading1.database.commits - idleReading0.database.commits - 1) / IDLE_S).toFixed(1)} transactions/s, table scans/s ` +
      [...idleReading1.database.bySchema]
        .map(
          ([schema, c]) =>
            [schema, (c.scans - (idleReading0.database.bySchema.get(schema)?.scans ?? 0)) / IDLE_S] as const,
        )
        .filter(([, perS]) => perS > 0)
        .map(([schema, perS]) => `${schema} ${perS.toFixed(1)}`)
        .join(', '),
  );

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

  // Phase 1: latency at fixed rates.
  const latency = new Map<
    number,
    { p50: number; p99: number; cpu: number; tx: number; rows: number; cpuRatio: number; p99Ratio: number }
  >();
  for (const rate of LATENCY_RATES) {
    const phase = `latency-${rate}`;
    say(`phase 1: ${rate}/s for ${LATENCY_S} s (open loop)`);
    const from = new Date(Date.now() - 1_000);
    const c0: Reading = await readPipeline(stack);
    const before = snap();
    const offered = await load(phase, rate, LATENCY_S);
    await offered.answered;
    reportLoad(phase, offered);
    // CPU and database work are counted until the phase's last webhook, so they divide by its messages.
    const missing = await drain(() => ledger.of(phase), 30);
    const after = snap();
    const c1 = await readPipeline(stack);
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
    const db = printDatabase(c0.database, c1.database, n);
    printKafkaWork(workBetween(stack, c0, c1, n));
    await breakdown(from, ledger, phase);
    const p50 = percentile(latencies, 50);
    const p99 = percentile(latencies, 99);
    const f = floor.find((x) => x.rate === rate);
    let cpuRatio = NaN;
    let p99Ratio = NaN;
    if (f) {
      const fl = [...f.latencies].sort((a, b) => a - b);
      cpuRatio = usage.stackMsPerMessage / f.cpuPerMessage;
      p99Ratio = p99 / percentile(fl, 99);
      console.log(
        `  against the floor at ${rate}/s: latency p50 ${(p50 / percentile(fl, 50)).toFixed(2)}x, p99 ${p99Ratio.toFixed(2)}x; ` +
          `CPU per message ${cpuRatio.toFixed(2)}x (the stack also runs the gateway's HTTP, PostgreSQL and the read model)`,
      );
    }
    latency.set(rate, {
      p50,
      p99,
      cpu: usage.stackMsPerMessage,
      tx: db.transactions,
      rows: db.rows,
      cpuRatio,
      p99Ratio,
    });
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

  const phases = [
    'warmup',
    ...LATENCY_RATES.map((r) => `latency-${r}`),
    ...STEPS.map((s) => `step-${s.rate}`),
    'burst',
  ];
  const tooMany = phases.map((phase) => [phase, ledger.tooManyOf(phase)] as const);
  console.log(`  429s by phase: ${tooMany.map(([phase, n]) => `${phase} ${n}`).join(', ')}`);

  // The targets of the issue "speed that stays", met or not in this run.
  const at100 = latency.get(100);
  const at500 = latency.get(500);
  const thousand = steps.find((x) => x.rate === 1000);
  const x = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? '-' : `${v.toFixed(2)}x`);
  const goals: [string, string, boolean][] = [
    [
      'CPU per message at 100/s <= 1.3x the floor',
      `${x(at100?.cpuRatio)} (${at100?.cpu.toFixed(2) ?? '-'} ms)`,
      (at100?.cpuRatio ?? NaN) <= 1.3,
    ],
    [
      'CPU per message at 500/s <= 1.15x the floor',
      `${x(at500?.cpuRatio)} (${at500?.cpu.toFixed(2) ?? '-'} ms)`,
      (at500?.cpuRatio ?? NaN) <= 1.15,
    ],
    [
      'p99 202 -> webhook at 100/s <= 2x the floor',
      `${x(at100?.p99Ratio)} (${at100?.p99.toFixed(0) ?? '-'} ms)`,
      (at100?.p99Ratio ?? NaN) <= 2,
    ],
    [
      'p99 202 -> webhook at 500/s <= 2x the floor',
      `${x(at500?.p99Ratio)} (${at500?.p99.toFixed(0) ?? '-'} ms)`,
      (at500?.p99Ratio ?? NaN) <= 2,
    ],
    [
      'offered 1,000/s: >= 99 % accepted, delivered keeps pace, backlog flat',
      thousand
        ? `${((100 * thousand.accepted) / 1000).toFixed(1)} %, ${thousand.delivered.toFixed(0)}/s, ${thousand.growth >= 0 ? '+' : ''}${thousand.growth.toFixed(0)}/s`
        : '-',
      !!thousand &&
        thousand.accepted >= 990 &&
        thousand.delivered >= 0.99 * thousand.accepted &&
        thousand.growth < 10,
    ],
    ['drain of a backlog >= 2,000/s', `${drainRate.toFixed(0)}/s`, drainRate >= 2000],
    ['idle stack <= 10 % of one core', `${idle.stackPercent.toFixed(1)} %`, idle.stackPercent <= 10],
    [
      '0 x 429 to the companies',
      `${tooMany.reduce((n, [, c]) => n + c, 0)}`,
      tooMany.every(([, n]) => n === 0),
    ],
    [
      'lost / duplicate webhooks 0 / 0',
      `${lost} / ${ledger.duplicates}`,
      lost === 0 && ledger.duplicates === 0,
    ],
  ];
  console.log('\nTargets (issue: speed that stays), this run:');
  for (const [what, figure, met] of goals)
    console.log(`  ${met ? 'met    ' : 'NOT MET'}  ${what.padEnd(72)} ${figure}`);
  console.log(`  ${goals.filter((t) => t[2]).length} of ${goals.length} met`);
} catch (error) {
  // A missing counter, or one that did not move while messages went through, ends the run here, loudly.
  console.error(`\nThe benchmark failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
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
    topics: [topics.message, deliveryTopic('telegram')],
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
