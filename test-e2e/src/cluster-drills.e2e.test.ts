import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createKafkaClient } from '@mds/kafka';
import { kafkaNodes, startKafkaNode, stopKafkaNode } from '@mds/local-infra';
import { createLogger } from '@mds/logging';
import {
  allReady,
  checkOutcomes,
  DELIVERY_SERVICES,
  DRILL_GATEWAY_ENV,
  describeFindings,
  summarizeFindings,
  tally,
  drillPeople,
  faults,
  SteadyLoad,
  type Findings,
  type Send,
} from './drill-kit.js';
import type { RunningService, Stack } from './harness.js';
import {
  PRODUCTION_TOPOLOGY,
  startDeliveryStack,
  type Messenger,
  type Sandbox,
  type SimulatedBot,
} from './sandbox.js';

// Failover drills in the production topology: two replicas of every service (behind one address each, as
// Kubernetes Services give) on a Kafka cluster of three brokers of the drill's own (every topic with 3
// replicas and min ISR 2), under a steady stream of sends by a client that retries like a real one. In
// turn: kill -9 the broker that leads the most partitions and bring it back; stop two of three brokers
// (sends must get 503, nothing acknowledged may be lost) and bring them back; a rolling restart of every
// service, one replica at a time; one replica of each consumer killed mid-batch while the other takes its
// partitions. After each: every accepted event_id has exactly one outcome in the log and the read API,
// one verified webhook (repeats only with the same webhook-id), nobody received a message twice, and no
// replica is left unready. It prints one table.
//
// `npm test` runs the short form; `npm run drill:cluster` (MDS_DRILL=long) the long one: more load,
// longer outages, every drill more than once.

const LONG = process.env.MDS_DRILL === 'long';
const PLAN = LONG
  ? { rate: 30, people: 24, calmMs: 20_000, brokerDownMs: 30_000, outageMs: 60_000, rounds: 3 }
  : { rate: 10, people: 8, calmMs: 3_000, brokerDownMs: 12_000, outageMs: 10_000, rounds: 1 };
/** The chart's preStop sleep: a replica leaving its Service gets SIGTERM this long after. */
const PRESTOP_MS = 5_000;
/** Past the consumers' session timeout (10 s): the survivor has taken the dead member's partitions. */
const TAKEOVER_MS = 13_000;

let stack: Stack;
let sandbox: Sandbox;
/** Where the drill's time goes, for its report: seconds by phase. */
const spent: string[] = [];
const began = Date.now();

beforeAll(async () => {
  ({ stack, sandbox } = await startDeliveryStack({
    ...PRODUCTION_TOPOLOGY,
    // The drills are about delivery; the dashboard only reads what it leaves.
    without: ['dashboard'],
    env: { gateway: DRILL_GATEWAY_ENV },
  }));
  spent.push(`start (3 brokers, ${stack.processes().length} processes) ${seconds(Date.now() - began)}`);
}, 300_000);

afterAll(async () => {
  await sandbox?.close();
  await stack?.stop();
}, 120_000);

interface Row {
  drill: string;
  did: string;
  unavailable: string;
  found: string;
  faults: Record<string, number>;
  exits: string[];
}

/** Partitions of the stack's topics led by each broker, by node id. */
async function leadersByBroker(): Promise<Map<number, number>> {
  const admin = createKafkaClient(
    { brokers: stack.infra.kafkaBrokers.split(','), clientId: 'cluster-drills' },
    createLogger({ service: 'cluster-drills', level: 'silent' }),
  ).admin();
  await admin.connect();
  try {
    const names = (await admin.listTopics()).filter((t) => t.startsWith(stack.topicPrefix));
    const counts = new Map<number, number>(kafkaNodes(stack.infraRun!).map((n) => [n.nodeId, 0]));
    for (const topic of (await admin.fetchTopicMetadata({ topics: names })).topics) {
      for (const p of topic.partitions) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
    }
    return counts;
  } finally {
    await admin.disconnect();
  }
}

/** The nodes by the partitions they lead, most first. */
async function busiestBrokers(): Promise<{ nodeId: number; leads: number; of: number }[]> {
  const counts = await leadersByBroker();
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  return [...counts]
    .filter(([nodeId]) => nodeId >= 0)
    .sort((a, b) => b[1] - a[1])
    .map(([nodeId, leads]) => ({ nodeId, leads, of: total }));
}

/** Events the replica's consumers have taken so far (its `mds_events_consumed_total`). */
async function consumed(replica: RunningService): Promise<number> {
  const text = await (
    await fetch(`${replica.opsUrl}/metrics`, { signal: AbortSignal.timeout(2_000) })
  ).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('mds_events_consumed_total{'))
    .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const drills: Record<string, (round: number) => Promise<string>> = {
  async 'broker leading the most partitions: kill -9, back'() {
    const [busiest] = await busiestBrokers();
    const run = stack.infraRun!;
    await stopKafkaNode(run, busiest!.nodeId, { signal: 'SIGKILL' });
    const down = Date.now();
    await sleep(PLAN.brokerDownMs);
    await startKafkaNode(run, busiest!.nodeId);
    return `kill -9 broker ${busiest!.nodeId} (led ${busiest!.leads} of ${busiest!.of} partitions); started again after ${seconds(Date.now() - down)}`;
  },

  async 'two of three brokers stopped, then back one by one'() {
    const [first, second] = await busiestBrokers();
    const run = stack.infraRun!;
    await stopKafkaNode(run, first!.nodeId, { signal: 'SIGKILL' });
    await stopKafkaNode(run, second!.nodeId, { signal: 'SIGKILL' });
    const down = Date.now();
    await sleep(PLAN.outageMs);
    const during = load.answers.filter((a) => a.at >= down);
    refusedWhileQuorumLost += during.filter((a) => a.status === 503).length;
    acceptedWhileQuorumLost += during.filter((a) => a.status === 202).length;
    await startKafkaNode(run, first!.nodeId);
    const oneBack = Date.now();
    const resumed = await waitFor202(oneBack, 120_000);
    if (resumed === undefined) notResumedWithOneBack++;
    await startKafkaNode(run, second!.nodeId);
    return (
      `kill -9 brokers ${first!.nodeId} and ${second!.nodeId} for ${seconds(oneBack - down)} ` +
      `(answers meanwhile: ${tally(during) || 'none'}); ` +
      `broker ${first!.nodeId} back: first 202 ${resumed === undefined ? 'never' : `${seconds(resumed - oneBack)} later`}; then broker ${second!.nodeId}`
    );
  },

  async 'rolling restart of every service'(round) {
    // All services at once (as `kubectl rollout restart` of every Deployment), or, in the long form's
    // later rounds, one service after another.
    const together = round === 0;
    const roll = async (name: string) => {
      const codes = await stack.rollingRestart(name, { drainMs: PRESTOP_MS });
      return codes.some((c) => c !== 0) ? [`${name} ${codes.join(',')}`] : [];
    };
    const unclean: string[] = [];
    if (together) unclean.push(...(await Promise.all(DELIVERY_SERVICES.map(roll))).flat());
    else for (const name of DELIVERY_SERVICES) unclean.push(...(await roll(name)));
    return (
      `${DELIVERY_SERVICES.length} services ${together ? 'at once' : 'one after another'}, each a replica at a ` +
      `time: a new one ready, then an old one out of its address, SIGTERM ${PRESTOP_MS / 1000} s later (${DELIVERY_SERVICES.length * 2} replicas); ` +
      `stopped cleanly: ${unclean.length === 0 ? 'all (exit 0)' : `not ${unclean.join('; ')}`}`
    );
  },

  async 'one replica of each consumer killed mid-batch'(round) {
    const killed: string[] = [];
    const victims: RunningService[] = [];
    for (const name of DELIVERY_SERVICES) {
      const replica = stack.replicas(name)[round % 2]!;
      // Mid-batch: killed right after its consumers were seen taking events (within 2 s of trying).
      let busy = false;
      const until = Date.now() + 2_000;
      let last = await consumed(replica);
      while (!busy && Date.now() < until) {
        await sleep(50);
        const now = await consumed(replica);
        busy = now > last;
        last = now;
      }
      await replica.kill('SIGKILL');
      victims.push(replica);
      killed.push(`${replica.label}${busy ? ' (consuming)' : ''}`);
    }
    await sleep(TAKEOVER_MS);
    await Promise.all(victims.map((replica) => replica.start()));
    return `kill -9 ${killed.join(', ')}; the other replicas took their partitions; started again after ${seconds(TAKEOVER_MS)}`;
  },
};

let load: SteadyLoad;
/** Answers while two of three brokers were down: 503s, and 202s (each must be on the log: the checks say). */
let refusedWhileQuorumLost = 0;
let acceptedWhileQuorumLost = 0;
/** Rounds in which sends were not accepted again with two of three brokers running (the third still down). */
let notResumedWithOneBack = 0;

/** When the first 202 came after `from` (undefined if none within `timeoutMs`). */
async function waitFor202(from: number, timeoutMs: number): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const back = load.answers.find((a) => a.at >= from && a.status === 202);
    if (back) return back.at;
    await sleep(100);
  }
  return undefined;
}

function table(rows: Row[]): string {
  const cells = (r: string[]) => `| ${r.map((c) => c.replaceAll('|', '/')).join(' | ')} |`;
  return [
    cells(['drill', 'what it did', 'unavailable (first failure to first 202)', 'found']),
    cells(['---', '---', '---', '---']),
    ...rows.map((r) => cells([r.drill, r.did, r.unavailable, r.found])),
  ].join('\n');
}

it(
  'through broker failures, a lost quorum, rolling restarts and killed consumers, every accepted message has one outcome and one webhook',
  { timeout: LONG ? 3_600_000 : 900_000 },
  async () => {
    const company = await sandbox.companyWithWebhooks('Cluster drills');
    const bots: Record<Messenger, SimulatedBot> = {
      telegram: await sandbox.bot(company.companyId, 'telegram', 'cluster_tg'),
      max: await sandbox.bot(company.companyId, 'max', 'cluster_max'),
    };
    const linking = Date.now();
    const people = await drillPeople(sandbox, company, bots, PLAN.people, 7_100_000);
    spent.push(`people linked ${seconds(Date.now() - linking)}`);
    load = new SteadyLoad({
      sandbox,
      company,
      people,
      rate: PLAN.rate,
      maxSends: 100_000,
      maxInFlight: 200,
      patienceMs: 180_000,
    });
    const checked = new Set<number>();
    const check = async (sends: readonly Send[]): Promise<Findings> => {
      const cohort = sends.filter((x) => !checked.has(x.i) && (x.eventId !== undefined || x.gaveUp));
      for (const x of cohort) checked.add(x.i);
      return checkOutcomes({
        stack,
        sandbox,
        company,
        receiver: company.webhooks,
        people,
        bots,
        sends: cohort,
        allSends: load.sends,
        webhookWaitMs: 120_000,
      });
    };

    const rows: Row[] = [];
    load.start();
    await sleep(PLAN.calmMs);
    for (let round = 0; round < PLAN.rounds; round++) {
      for (const [drill, run] of Object.entries(drills)) {
        const exits: string[] = [];
        const t0 = Date.now();
        const did = await run(round);
        await allReady(stack, drill, exits);
        const readyAt = Date.now();
        // Load goes on a little, so that what the drill disturbed is behind us before the check.
        await sleep(PLAN.calmMs);
        const gap = load.unavailability(t0, Date.now());
        const checkedAt = Date.now();
        const findings = await check(load.sends);
        spent.push(`${drill} ${seconds(checkedAt - t0)} + check ${seconds(Date.now() - checkedAt)}`);
        rows.push({
          drill: PLAN.rounds > 1 ? `${drill} (round ${round + 1})` : drill,
          did: `${did}; every replica ready ${seconds(readyAt - t0)} after it began`,
          unavailable: gap ? `${seconds(gap.ms)} (${gap.status})` : 'none',
          found: `${summarizeFindings(findings)}; ${exits.length === 0 ? 'no replica left unready' : exits.join('; ')}`,
          faults: faults(findings),
          exits,
        });
        console.log(
          `[cluster-drills] ${rows.at(-1)!.drill}: ${rows.at(-1)!.did}; ${describeFindings(findings)}`,
        );
        for (const p of findings.problems) console.log(`[cluster-drills]   ${p}`);
      }
    }
    await load.stop();
    const last = await check(load.sends);
    const gaveUp = load.sends.filter((x) => x.gaveUp);
    rows.push({
      drill: 'all sends, at the end',
      did: `${load.sends.length} sends (retried ${load.sends.filter((x) => x.attempts > 1).length}, given up ${gaveUp.length}); the last ones checked here`,
      unavailable: '',
      found: summarizeFindings(last),
      faults: faults(last),
      exits: [],
    });
    for (const x of gaveUp.slice(0, 5)) console.log(`[cluster-drills] send #${x.i} given up: ${x.gaveUp}`);
    for (const p of last.problems) console.log(`[cluster-drills]   ${p}`);
    console.log(`[cluster-drills] at the end: ${describeFindings(last)}`);
    console.log(
      `[cluster-drills] ${LONG ? 'long' : 'short'} form, logs in ${stack.artifacts}\n${table(rows)}\n` +
        `[cluster-drills] time: ${spent.join('; ')}; in all ${seconds(Date.now() - began)}`,
    );

    expect(load.sends.filter((x) => x.eventId).length).toBeGreaterThan(0);
    // With two of three brokers gone, sends were refused (503) rather than acknowledged.
    expect(refusedWhileQuorumLost).toBeGreaterThan(0);
    expect(notResumedWithOneBack).toBe(0);
    console.log(`[cluster-drills] 202s while two brokers were down: ${acceptedWhileQuorumLost}`);
    const zero = Object.fromEntries(Object.keys(faults(last)).map((k) => [k, 0]));
    expect(rows.map((r) => ({ drill: r.drill, ...r.faults, exits: r.exits }))).toEqual(
      rows.map((r) => ({ drill: r.drill, ...zero, exits: [] })),
    );
    expect(gaveUp.map((x) => `#${x.i}: ${x.gaveUp}`)).toEqual([]);
  },
);
