import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, restartKafka, restartPostgres, startInfra, type Infra } from '@mds/local-infra';
import { uniqueName } from '@mds/local-infra/testing';
import {
  allReady,
  checkOutcomes,
  DELIVERY_SERVICES,
  DRILL_GATEWAY_ENV,
  drillPeople,
  faults,
  keepInfraLogs,
  OWN_INFRA_ENV,
  postRetrying,
  SteadyLoad,
  type Answer,
  type Findings,
  type Posted,
} from './drill-kit.js';
import { everyGroupCaughtUp, setAside } from './caught-up.js';
import { Stack } from './harness.js';
import {
  deliveryServices,
  Sandbox,
  WebhookReceiver,
  type DemoCompany,
  type EventStateBody,
  type Messenger,
  type SimulatedBot,
  type SimulatedPerson,
  type WebhookAnswer,
} from './sandbox.js';

// The bounded soak (`npm run soak`): the whole delivery service as processes on a broker and a PostgreSQL
// of its own, under a steady mixed load from five companies (a healthy webhook endpoint, a slow one, one
// that fails with NUL and then bytes that are no UTF-8 in its body before it answers 200, one that answers
// 410, one whose messengers answer every send with an error of NUL, controls or broken bytes), sends to both
// messengers (some to people who blocked the bots or never linked), client/check and change_phone, while
// a seeded scheduler injects one fault at a time: kill -9 of a random service (started again after a few
// seconds, as Kubernetes would), a broker restart, a PostgreSQL restart, client-registry held down past
// every cache, a window of messenger calls that deliver but lose their answer, a window of messenger
// timeouts. Afterwards it checks the invariants (every consumer group of every service caught up, the
// dashboard's read models included, nothing set aside among them) and prints one table. Loopback only; every
// loop bounded.

export interface SoakOptions {
  /** How long the load and the scheduler run (the first round of faults, one of each kind, always ends). */
  minutes: number;
  seed: number;
  /** Calm between two faults, drawn from [min, max] ms. */
  gapMs: readonly [number, number];
  /** How long client-registry is held down: past the senders' credential cache (60 s) and the gateway's key cache. */
  registryDownMs: number;
  /** How long a window of messenger faults (calls that lose their answer, timeouts) lasts. */
  faultWindowMs: number;
  log: (line: string) => void;
}

export interface SoakResult {
  table: string;
  violations: number;
}

/** The soak's settings: 10 minutes unless SOAK_MINUTES says otherwise; SOAK_SEED repeats a run's schedule. */
export function soakOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): SoakOptions {
  const minutes = Number(env.SOAK_MINUTES ?? 10);
  const seed = env.SOAK_SEED ? Number(env.SOAK_SEED) : randomBytes(4).readUInt32BE(0);
  if (!(minutes > 0 && minutes <= 240))
    throw new Error(`SOAK_MINUTES must be in (0, 240], not ${env.SOAK_MINUTES}`);
  if (!Number.isInteger(seed)) throw new Error(`SOAK_SEED must be an integer, not ${env.SOAK_SEED}`);
  return {
    minutes,
    seed,
    gapMs: [20_000, 40_000],
    registryDownMs: 70_000,
    faultWindowMs: 10_000,
    log: (line) => console.log(`[soak] ${line}`),
  };
}

/** A seeded generator (mulberry32): the same seed gives the same schedule. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const FAULT_KINDS = [
  'kill',
  'broker',
  'postgres',
  'registry-down',
  'drop-after-delivery',
  'timeout',
] as const;
type FaultKind = (typeof FAULT_KINDS)[number];

/** The bot API method that sends a message, as the simulator's faults name it. */
const SEND_METHOD: Record<Messenger, string> = { telegram: 'sendMessage', max: 'messages' };

/** How long after a fault ends an interrupted call may still be decided DELIVERY_UNCONFIRMED. */
const UNCONFIRMED_GRACE_MS = 120_000;
/** Sends retried this long (same Idempotency-Key): longer than the registry is held down. */
const PATIENCE_MS = 180_000;
const MEMORY_SAMPLE_MS = 10_000;
const MEMORY_WARMUP_MS = 60_000;
/** A process's series is judged with this many samples after its warm-up (3 minutes). */
const MEMORY_MIN_SAMPLES = 18;

interface Profile {
  name: string;
  rate: number;
  people: number;
  /** What its webhook endpoint answers. */
  endpoint: (
    random: () => number,
  ) => (w: { headers: Record<string, string> }) => WebhookAnswer | Promise<WebhookAnswer>;
  /** Whether every accepted message must get its webhook (not after a 410 disabled the endpoint). */
  webhooks: boolean;
  /**
   * Its bots' messengers answer every send with this `hostile-error` fault of the simulator: its messages fail,
   * with descriptions cleaned of what no text may hold.
   */
  hostileMessenger?: Record<Messenger, 'controls' | 'invalid-utf8' | 'huge' | 'not-json'>;
}

/** Attempts per webhook-id an endpoint has seen. */
function attemptCounter(): (w: { headers: Record<string, string> }) => number {
  const seen = new Map<string, number>();
  return (w) => {
    const id = w.headers['webhook-id'] ?? '';
    const n = (seen.get(id) ?? 0) + 1;
    seen.set(id, n);
    return n;
  };
}

const PROFILES: Profile[] = [
  { name: 'healthy', rate: 8, people: 12, endpoint: () => () => 200, webhooks: true },
  {
    // 2-12 s; a fifth of first attempts 20 s, past the dispatcher's 15 s: retried (at least 60 s later).
    name: 'slow',
    rate: 1,
    people: 4,
    endpoint: (random) => {
      const attempt = attemptCounter();
      return async (w) => {
        const first = attempt(w) === 1;
        await sleep(first && random() < 0.2 ? 20_000 : 2_000 + random() * 10_000);
        return 200;
      };
    },
    webhooks: true,
  },
  {
    // 500 with a NUL byte in the body at the first attempt of every webhook, bytes that are no UTF-8 at the
    // second, then 200.
    name: 'nul',
    rate: 2,
    people: 4,
    endpoint: () => {
      const attempt = attemptCounter();
      return (w) => {
        const n = attempt(w);
        if (n === 1) return { status: 500, body: 'boom\0 \u0007\u001b[31m' };
        if (n === 2)
          return { status: 500, body: Buffer.from([0x7b, 0xff, 0xfe, 0xc0, 0x80, 0xed, 0xa0, 0x80]) };
        return 200;
      };
    },
    webhooks: true,
  },
  { name: 'gone', rate: 1, people: 4, endpoint: () => () => 410, webhooks: false },
  {
    name: 'hostile-messenger',
    rate: 1,
    people: 2,
    endpoint: () => () => 200,
    webhooks: true,
    hostileMessenger: { telegram: 'controls', max: 'invalid-utf8' },
  },
];

interface Tenant {
  profile: Profile;
  company: DemoCompany;
  receiver: WebhookReceiver;
  bots: Record<Messenger, SimulatedBot>;
  /** Linked to both bots: every send to them must be sent (or fail only where a fault explains it). */
  reachable: SimulatedPerson[];
  /** Blocked both bots, or never linked: their sends fail with a routing or blocking code. */
  unreachable: SimulatedPerson[];
  load: SteadyLoad;
}

/** A client/check or change_phone request of the load. */
interface Request extends Posted {
  i: number;
  kind: 'check' | 'change_phone';
}

/** One process's RSS over one lifetime (a restarted process starts a new series). */
interface MemorySeries {
  label: string;
  service: string;
  pid: number;
  since: number;
  /** RSS and, once the process made a full collection, the heap live after its last one (its /metrics). */
  samples: { at: number; kb: number; heapKb?: number }[];
}

interface FaultRecord {
  label: string;
  kind: FaultKind;
  from: number;
  to: number;
  readyMs: number;
  unanswered: number | undefined;
  messenger?: Messenger;
}

/** Runs the soak: starts its own infrastructure and services, and stops them before answering. */
export async function runSoak(o: SoakOptions): Promise<SoakResult> {
  const began = Date.now();
  const random = seededRandom(o.seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  o.log(`seed ${o.seed} (SOAK_SEED=${o.seed} repeats the schedule), ${o.minutes} min`);

  const infraName = uniqueName('soak');
  // Its own broker and database as processes: it restarts them by process id.
  const infraEnv = OWN_INFRA_ENV;
  let infra: Infra | undefined;
  let stack: Stack | undefined;
  const receivers: WebhookReceiver[] = [];
  try {
    infra = await startInfra({ name: infraName, ephemeral: true, env: infraEnv });
    const adminToken = `soak-admin-${randomBytes(12).toString('hex')}`;
    const operatorPort = await freePort();
    stack = await Stack.start({
      infra,
      env: { INTERNAL_GRPC_TOKEN: randomBytes(24).toString('base64url') },
      services: deliveryServices({
        grpcPort: await freePort(),
        operatorPort,
        adminToken,
        // The gateway keeps API keys as long as in production (30 s), so sends are still accepted for a
        // while after client-registry goes down and must wait for it in Kafka.
        env: { gateway: { ...DRILL_GATEWAY_ENV, API_KEY_CACHE_TTL_MS: '30000' } },
      }),
    });
    const s = stack;
    const sandbox = new Sandbox(s, adminToken, '127.0.0.1', `http://127.0.0.1:${operatorPort}`);
    o.log(`stack up in ${seconds(Date.now() - began)} (logs in ${s.artifacts})`);

    // The companies, each with a bot per messenger, people linked to both, and its endpoint.
    const endpointRandom = seededRandom(o.seed ^ 0x5eed);
    const tenants: Tenant[] = [];
    let firstPhone = 1_000_000;
    for (const profile of PROFILES) {
      const receiver = await new WebhookReceiver().start();
      receivers.push(receiver);
      receiver.respond = profile.endpoint(endpointRandom);
      const company = await sandbox.company(`Soak ${profile.name}`, receiver.url);
      receiver.verifyWith(company.secrets);
      const bots: Record<Messenger, SimulatedBot> = {
        telegram: await sandbox.bot(company.companyId, 'telegram', `soak_${profile.name}_tg`),
        max: await sandbox.bot(company.companyId, 'max', `soak_${profile.name}_max`),
      };
      const reachable = await drillPeople(sandbox, company, bots, profile.people, firstPhone);
      firstPhone += profile.people;
      // Every send of its bots answered by a hostile error while the soak runs (a count it never uses up).
      for (const [messenger, hostile] of Object.entries(profile.hostileMessenger ?? {}))
        await sandbox.simulator('POST', '/control/faults', {
          kind: 'hostile-error',
          bot_id: bots[messenger as Messenger].simulatorId,
          method: SEND_METHOD[messenger as Messenger],
          hostile,
          count: 1_000_000,
        });
      const unreachable: SimulatedPerson[] = [];
      if (profile.name === 'healthy') {
        const [blocked] = await drillPeople(sandbox, company, bots, 1, firstPhone++);
        for (const bot of Object.values(bots)) {
          await sandbox.act(blocked!, 'block', bot);
          await sandbox.waitForLink(company.companyId, blocked!.phone, bot, false, 30_000);
        }
        const phone = `7916${String(firstPhone++).padStart(7, '0')}`;
        unreachable.push(blocked!, { ...(await sandbox.person(phone, 'Stranger')), phone });
      }
      const load = new SteadyLoad({
        sandbox,
        company,
        people: [...reachable, ...unreachable],
        rate: profile.rate,
        maxSends: Math.ceil(profile.rate * (o.minutes * 60 + 900)),
        maxInFlight: 200,
        patienceMs: PATIENCE_MS,
        keyPrefix: `soak-${profile.name}`,
      });
      tenants.push({ profile, company, receiver, bots, reachable, unreachable, load });
    }
    const healthy = tenants[0]!;
    // Movers change their number back and forth (change_phone); nobody sends them messages.
    const movers = await drillPeople(sandbox, healthy.company, healthy.bots, 2, firstPhone);
    firstPhone += 4;
    o.log(`companies, bots and people ready at ${seconds(Date.now() - began)}`);

    // The load.
    const loadStarted = Date.now();
    for (const t of tenants) t.load.start();
    const requests: Request[] = [];
    const requestAnswers: Answer[] = [];
    let requesting = true;
    const requestLoop = (async () => {
      const phones = movers.map((m) => [m.phone, `7916${String(firstPhone++).padStart(7, '0')}`]);
      for (let i = 0; requesting && i < 2_000; i++) {
        const kind = i % 2 === 0 ? 'check' : 'change_phone';
        const mover = phones[Math.floor(i / 2) % phones.length]!;
        const path = kind === 'check' ? '/client/check' : '/change_phone';
        const body =
          kind === 'check'
            ? { phone_number: pick(healthy.reachable).phone }
            : { old_phone: mover[0], new_phone: mover[1] };
        if (kind === 'change_phone') mover.reverse();
        const posted = await postRetrying({
          url: `${sandbox.gatewayUrl}/api/v1${path}`,
          apiKey: healthy.company.apiKey,
          key: `soak-request-${i}`,
          body,
          patienceMs: PATIENCE_MS,
          answers: requestAnswers,
        });
        requests.push({ i, kind, ...posted });
        await sleep(2_500);
      }
    })();

    // Memory of every process, sampled.
    const series = new Map<number, MemorySeries>();
    const sampleMemory = async () => {
      await Promise.all(
        s.processes().map(async ({ service, replica }) => {
          const pid = replica.pid;
          if (pid === undefined || !replica.running) return;
          const kb = rssKb(pid);
          if (kb === undefined) return;
          const heapKb = await heapLiveKb(replica.opsUrl);
          const one = series.get(pid) ?? {
            label: replica.label,
            service,
            pid,
            since: Date.now(),
            samples: [],
          };
          one.samples.push({ at: Date.now(), kb, ...(heapKb === undefined ? {} : { heapKb }) });
          series.set(pid, one);
        }),
      );
    };
    await sampleMemory();
    const sampler = setInterval(() => void sampleMemory(), MEMORY_SAMPLE_MS);

    // The scheduler: one fault at a time; every kind once (in a seeded order), then seeded picks.
    const exits: string[] = [];
    const records: FaultRecord[] = [];
    const firstRound = [...FAULT_KINDS].sort(() => random() - 0.5);
    const end = loadStarted + o.minutes * 60_000;
    const hardEnd = end + 15 * 60_000;
    while ((Date.now() < end || firstRound.length > 0) && Date.now() < hardEnd) {
      await sleep(o.gapMs[0] + random() * (o.gapMs[1] - o.gapMs[0]));
      const kind = firstRound.shift() ?? pick(FAULT_KINDS);
      const from = Date.now();
      const done = await inject(kind);
      const to = Date.now();
      await allReady(s, done.label, exits);
      const readyMs = Date.now() - from;
      const record: FaultRecord = {
        ...done,
        kind,
        from,
        to,
        readyMs,
        unanswered: healthy.load.unavailability(from)?.ms,
      };
      records.push(record);
      o.log(
        `${seconds(Date.now() - began)}: ${done.label}; ready after ${seconds(readyMs)}` +
          ` (sends ${tenants.reduce((n, t) => n + t.load.sends.length, 0)}, open ${tenants.reduce((n, t) => n + t.load.waiting, 0)})`,
      );
    }

    async function inject(kind: FaultKind): Promise<{ label: string; messenger?: Messenger }> {
      switch (kind) {
        case 'kill': {
          const name = pick(DELIVERY_SERVICES);
          const replica = s.service(name);
          await replica.kill('SIGKILL');
          await sleep(2_000 + random() * 3_000);
          await replica.start();
          const messenger =
            name === 'telegram-sender' ? 'telegram' : name === 'max-sender' ? 'max' : undefined;
          return { label: `kill -9 ${name}, started again 2-5 s later`, ...(messenger ? { messenger } : {}) };
        }
        case 'broker':
          await restartKafka(infraName, infraEnv);
          return { label: 'Kafka broker restart' };
        case 'postgres':
          await restartPostgres(infraName, infraEnv);
          return { label: 'PostgreSQL restart' };
        case 'registry-down': {
          const replica = s.service('client-registry');
          await replica.kill('SIGKILL');
          await sleep(o.registryDownMs);
          await replica.start();
          return { label: `client-registry down ${seconds(o.registryDownMs)} (past every cache)` };
        }
        case 'drop-after-delivery':
        case 'timeout': {
          const messenger = pick(['telegram', 'max'] as const);
          const fault = await sandbox.fault({
            kind,
            bot: healthy.bots[messenger],
            method: SEND_METHOD[messenger],
            count: 10,
            ...(kind === 'timeout' ? { ms: 5_000 } : {}),
          });
          await sleep(o.faultWindowMs);
          await sandbox.clearFault(fault.id);
          const what =
            kind === 'timeout' ? 'messenger timeouts' : 'messenger calls that deliver, answer lost';
          return {
            label: `${what} (${messenger}, up to 10 calls in ${seconds(o.faultWindowMs)})`,
            messenger,
          };
        }
      }
    }

    // The end: the load stops, every process is ready, every outcome is in.
    requesting = false;
    await Promise.all([...tenants.map((t) => t.load.stop()), requestLoop]);
    clearInterval(sampler);
    await sampleMemory();
    o.log(`load stopped at ${seconds(Date.now() - began)}; checking`);
    let notReady = 0;
    try {
      await allReady(s, 'the soak', exits);
    } catch (error) {
      notReady++;
      o.log(String(error));
    }

    const check = (t: Tenant, webhookWaitMs?: number) =>
      checkOutcomes({
        stack: s,
        sandbox,
        company: t.company,
        receiver: t.receiver,
        people: [...t.reachable, ...t.unreachable],
        bots: t.bots,
        sends: t.load.sends,
        webhookWaitMs: webhookWaitMs ?? 300_000,
      });
    const withWebhooks = tenants.filter((t) => t.profile.webhooks);
    const found = new Map<Tenant, Findings>(
      await Promise.all(withWebhooks.map(async (t) => [t, await check(t)] as const)),
    );
    // The endpoint that answered 410 gets no more webhooks: its outcomes are awaited in the read API.
    for (const t of tenants.filter((x) => !x.profile.webhooks)) {
      await waitDecided(
        sandbox,
        t.company.apiKey,
        t.load.sends.flatMap((x) => (x.eventId ? [x.eventId] : [])),
      );
      found.set(t, await check(t, 1));
    }

    // Violations, counted by invariant.
    const violations: [string, number][] = [];
    const notes: [string, string][] = [];
    const sum = (k: string, ts = tenants) => ts.reduce((n, t) => n + faults(found.get(t)!)[k]!, 0);
    for (const k of Object.keys(faults(found.get(healthy)!))) {
      violations.push([
        k === 'noWebhook' ? 'noWebhook (not the 410 endpoint)' : k,
        sum(k, k === 'noWebhook' ? withWebhooks : tenants),
      ]);
    }
    const problems = tenants.flatMap((t) =>
      found
        .get(t)!
        // No webhook is owed after a 410 disabled the endpoint.
        .problems.filter((p) => t.profile.webhooks || !p.endsWith(', no webhook'))
        .map((p) => `${t.profile.name}: ${p}`),
    );

    // Failures: a message to a reachable person fails only as DELIVERY_UNCONFIRMED, and only where a fault
    // interrupted a call on its messenger (a sender killed, calls that lost their answer, timeouts).
    const explains = (messenger: Messenger, at: number) =>
      records.some((r) => r.messenger === messenger && at >= r.from && at <= r.to + UNCONFIRMED_GRACE_MS);
    const registryDown = records.filter((r) => r.kind === 'registry-down');
    let unexplained = 0;
    let failedWhileRegistryDown = 0;
    let acceptedBeforeOrDuringHold = 0;
    let unreachableSent = 0;
    let failedByHostileMessenger = 0;
    for (const t of tenants) {
      const f = found.get(t)!;
      const reachable = new Set(t.reachable.map((p) => p.phone));
      for (const x of t.load.sends) {
        const outcome = x.eventId ? f.outcomes.get(x.eventId) : undefined;
        if (!outcome) continue;
        const inHold = registryDown.some((r) => outcome.at >= r.from && outcome.at <= r.to + 30_000);
        if (!reachable.has(x.person.phone)) {
          if (outcome.state === 'sent') unreachableSent++;
          continue;
        }
        if (inHold) acceptedBeforeOrDuringHold++;
        if (outcome.state !== 'failed') continue;
        if (t.profile.hostileMessenger) {
          failedByHostileMessenger++;
          continue;
        }
        // A call whose answer a messenger fault lost is DELIVERY_UNCONFIRMED whenever it happens, also in the 30 s
        // after the registry is back: that is the messenger fault's doing, not the registry's.
        const explained = outcome.code === 'DELIVERY_UNCONFIRMED' && explains(x.messenger, outcome.at);
        if (inHold && !explained) failedWhileRegistryDown++;
        if (!explained) {
          unexplained++;
          if (problems.length < 60)
            problems.push(
              `${t.profile.name}: ${x.eventId} (#${x.i} ${x.messenger}) failed ${outcome.code} at ${new Date(outcome.at).toISOString()}, no fault explains it`,
            );
        }
      }
    }
    violations.push(
      ['failed to a reachable person, no fault explains it', unexplained],
      ['failed to a reachable person while client-registry was down', failedWhileRegistryDown],
      ['sent to a person who blocked the bot or never linked', unreachableSent],
    );

    // client/check and change_phone: one outcome webhook each (repeats only with the same webhook-id), and
    // the read API says it is finished.
    const acceptedRequests = requests.filter((r) => r.eventId);
    const kindOf = { check: 'client.check', change_phone: 'client.phone_changed' } as const;
    let requestNoWebhook = 0;
    let requestInconsistent = 0;
    let requestUnfinished = 0;
    for (const r of acceptedRequests) {
      const hooks = healthy.receiver.about(r.eventId!).filter((w) => w.payload?.type === kindOf[r.kind]);
      if (hooks.length === 0) {
        requestNoWebhook++;
        problems.push(`${r.kind} ${r.eventId}: no ${kindOf[r.kind]} webhook`);
      }
      const ids = new Set(hooks.map((w) => w.headers['webhook-id']));
      const bodies = new Set(hooks.map((w) => w.body));
      if (ids.size > 1 || bodies.size > 1 || hooks.some((w) => !w.verified)) {
        requestInconsistent++;
        problems.push(`${r.kind} ${r.eventId}: ${hooks.length} webhooks, ids ${[...ids].join(',')}`);
      }
      const state = await sandbox.call<EventStateBody>(healthy.company.apiKey, `/events/${r.eventId}`);
      if (state.status !== 200 || state.body.state === 'new') {
        requestUnfinished++;
        problems.push(`${r.kind} ${r.eventId}: read API ${state.status} ${state.body?.state}`);
      }
    }
    violations.push(
      ['client/check, change_phone without their outcome webhook', requestNoWebhook],
      ['client/check, change_phone with differing or unverified webhooks', requestInconsistent],
      ['client/check, change_phone unfinished in the read API', requestUnfinished],
      ['processes that exited by themselves', exits.length],
      ['processes not ready at the end', notReady],
    );

    // Every consumer group of every service caught up (their /metrics), the dashboard's read models as its own
    // banner says (/api/freshness); nothing set aside in any service's dead_letters.
    let groupsBehind: string[];
    try {
      const session = await sandbox.dashboardSession(
        healthy.company.companyId,
        'a long passphrase for the soak',
      );
      groupsBehind = await everyGroupCaughtUp(s, {
        dashboard: (path) => session.call('GET', path),
        timeoutMs: 120_000,
      });
    } catch (error) {
      groupsBehind = [`the dashboard's freshness as a member: ${String(error)}`];
    }
    const asides = await setAside(s.databaseUrl);
    violations.push(
      [
        "consumer groups behind at the end (every service's, the dashboard's read models)",
        groupsBehind.length,
      ],
      ["records set aside (every service's dead_letters)", asides.length],
    );
    problems.push(
      ...groupsBehind,
      ...asides.map(
        (a) => `set aside by ${a.source} (${a.schema}), read from ${a.topic}: ${a.reason.slice(0, 200)}`,
      ),
    );

    // Memory: flat after warm-up, per process lifetime.
    const memory = judgeMemory([...series.values()]);
    // Every sample, beside the services' logs, for a look at a series the table only summarizes.
    writeFileSync(join(s.artifacts, 'memory.json'), JSON.stringify([...series.values()]));
    violations.push(['processes whose memory grew after warm-up', memory.grew.length]);
    problems.push(...memory.grew, ...exits);

    // What it did.
    const did = new Map<string, FaultRecord[]>();
    for (const r of records) did.set(r.label, [...(did.get(r.label) ?? []), r]);
    const allSends = tenants.flatMap((t) => t.load.sends);
    const accepted = allSends.filter((x) => x.eventId).length;
    const codes: Record<string, number> = {};
    for (const f of found.values())
      for (const [code, n] of Object.entries(f.failedCodes)) codes[code] = (codes[code] ?? 0) + n;
    notes.push(
      [
        'sends',
        `${allSends.length} from ${tenants.length} companies (${tenants.map((t) => `${t.profile.name} ${t.load.sends.length}`).join(', ')}); accepted ${accepted}, given up ${allSends.filter((x) => x.gaveUp).length}, retried ${allSends.filter((x) => x.attempts > 1).length}`,
      ],
      ['client/check, change_phone', `${requests.length} requested, ${acceptedRequests.length} accepted`],
      ['failed, by code', JSON.stringify(codes)],
      ["failed by the hostile messenger's errors (its company's sends)", String(failedByHostileMessenger)],
      [
        "reachable people's messages decided while the registry was down (+30 s)",
        String(acceptedBeforeOrDuringHold),
      ],
      [
        'webhooks repeated (same webhook-id)',
        String([...found.values()].reduce((n, f) => n + f.webhooksRepeated, 0)),
      ],
      [
        'webhooks to the 410 endpoint',
        String(tenants.find((t) => !t.profile.webhooks)?.receiver.received.length ?? 0),
      ],
    );

    const total = violations.reduce((n, [, v]) => n + v, 0);
    const lines = [
      `soak: seed ${o.seed}, ${seconds(Date.now() - began)} in all (load ${o.minutes} min or the first round of faults, if longer)`,
      '',
      table(
        ['did', 'times', 'ready again (max)', 'sends unanswered (max)'],
        [...did].map(([label, rs]) => [
          label,
          String(rs.length),
          seconds(Math.max(...rs.map((r) => r.readyMs))),
          seconds(Math.max(0, ...rs.map((r) => r.unanswered ?? 0))),
        ]),
      ),
      '',
      table(
        ['found', 'count'],
        [...violations.map(([k, v]) => [k, String(v)]), ['VIOLATIONS', String(total)]],
      ),
      '',
      table(['noted (not violations)', ''], notes),
      '',
      table(
        [
          'memory',
          'live heap after full collections, first → last third; RSS after warm-up → at end',
          'lifetimes',
        ],
        memory.rows,
      ),
      ...(problems.length ? ['', ...problems.slice(0, 80)] : []),
    ];
    return { table: lines.join('\n'), violations: total };
  } finally {
    await Promise.all(receivers.map((r) => r.close()));
    await stack?.stop();
    if (stack) keepInfraLogs(infraName, stack.artifacts);
    await infra?.stop();
  }
}

/** A process's resident set (VmRSS), in kB; undefined when it is gone. */
function rssKb(pid: number): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return line ? Number(line.split(/\s+/)[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** The heap live after the process's last full collection (`mds_heap_after_major_gc_bytes`), in kB. */
async function heapLiveKb(url: string): Promise<number | undefined> {
  try {
    const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2_000) });
    const match = /^mds_heap_after_major_gc_bytes(?:\{[^}]*\})? (\S+)$/m.exec(await response.text());
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Flat after warm-up, judged on the live heap: per process lifetime, the samples from 60 s after it was
 * first seen; a series of at least 18 (3 minutes) grew when the median heap live after a full collection in
 * its last third is over 1.5 × that of its first third and over it by 25 MB. Neither RSS nor the heap in use
 * tells a leak: RSS steps up when a consumer catches up after a broker restart (a fetch of megabytes decoded
 * at once) and V8 keeps the pages, and the heap in use counts old garbage until the next full collection,
 * which after such a spike may come minutes later. The simulator keeps every message it delivered in
 * memory, as the messengers it stands in for do: shown, not judged.
 */
function judgeMemory(all: MemorySeries[]): { grew: string[]; rows: string[][] } {
  const grew: string[] = [];
  const rows: string[][] = [];
  const mb = (kb: number) => `${(kb / 1024).toFixed(0)} MB`;
  const byService = new Map<string, MemorySeries[]>();
  for (const one of all) byService.set(one.service, [...(byService.get(one.service) ?? []), one]);
  for (const [service, lifetimes] of byService) {
    for (const one of lifetimes) {
      const heap = one.samples
        .filter((x) => x.at >= one.since + MEMORY_WARMUP_MS && x.heapKb !== undefined)
        .map((x) => x.heapKb!);
      if (heap.length < MEMORY_MIN_SAMPLES || service === 'messenger-simulator') continue;
      const third = Math.floor(heap.length / 3);
      const first = median(heap.slice(0, third));
      const last = median(heap.slice(-third));
      if (last > first * 1.5 && last - first > 25 * 1024)
        grew.push(
          `${one.label} (pid ${one.pid}): live heap ${mb(first)} → ${mb(last)} (medians after full collections, first and last third)`,
        );
    }
    // The longest lifetime tells the most.
    const longest = [...lifetimes].sort((a, b) => b.samples.length - a.samples.length)[0]!;
    const warm = longest.samples.filter((x) => x.at >= longest.since + MEMORY_WARMUP_MS);
    const third = Math.max(1, Math.floor(warm.length / 3));
    const live = (xs: typeof warm) =>
      xs.some((x) => x.heapKb !== undefined)
        ? mb(median(xs.filter((x) => x.heapKb !== undefined).map((x) => x.heapKb!)))
        : '-';
    rows.push([
      `${service}${service === 'messenger-simulator' ? ' (not judged)' : ''}`,
      warm.length
        ? `${live(warm.slice(0, third))} → ${live(warm.slice(-third))}; RSS ${mb(warm[0]!.kb)} → ${mb(warm.at(-1)!.kb)} over ${seconds(warm.at(-1)!.at - warm[0]!.at)}`
        : 'too short',
      String(lifetimes.length),
    ]);
  }
  return { grew, rows };
}

/** Waits (bounded, 5 minutes) until the read API has an outcome for every id (not `new`). */
async function waitDecided(sandbox: Sandbox, apiKey: string, ids: string[]): Promise<void> {
  let open = ids;
  const deadline = Date.now() + 300_000;
  while (open.length > 0 && Date.now() < deadline) {
    const still: string[] = [];
    for (let k = 0; k < open.length; k += 50) {
      await Promise.all(
        open.slice(k, k + 50).map(async (id) => {
          const answer = await sandbox.call<EventStateBody>(apiKey, `/events/${id}`).catch(() => undefined);
          if (answer?.status !== 200 || answer.body.state === 'new') still.push(id);
        }),
      );
    }
    open = still;
    if (open.length) await sleep(2_000);
  }
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((x, c) => x.padEnd(widths[c]!)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
