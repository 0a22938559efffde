// One reading of everything a pipeline run counts, for a stack of processes; two readings give the work
// per message of a phase. Shared by the benchmark (which prints it) and the count guard (which asserts it).
import type { Stack } from '../harness.js';
import {
  difference,
  kafkaCounts,
  requireMoved,
  Scrape,
  type KafkaCounter,
  type KafkaCounts,
} from './counters.js';
import { databaseCounters, databaseWork, type DatabaseCounters, type DatabaseWork } from './database.js';

/**
 * Production's timings where the sandbox shortens them for tests (bots are read again every second there,
 * updates long-polled for 1 s, endpoints and keys cached for a moment): what an idle stack and a message cost
 * depends on them. The benchmark and the count guard run with these.
 */
export const PRODUCTION_TIMINGS: Partial<Record<string, Record<string, string>>> = {
  gateway: { API_KEY_CACHE_TTL_MS: '30000' },
  'webhook-dispatcher': { WEBHOOK_ENDPOINT_CACHE_TTL_MS: '5000', WEBHOOK_POLL_INTERVAL_MS: '500' },
  'telegram-sender': { UPDATES_POLL_TIMEOUT_S: '25', BOTS_REFRESH_MS: '5000' },
  'max-sender': { UPDATES_POLL_TIMEOUT_S: '25', BOTS_REFRESH_MS: '5000' },
};

/** The services of the pipeline from a 202 to a webhook (the dashboard folds the log too, but is no stage of it). */
export const PIPELINE_SERVICES = [
  'messenger-simulator',
  'client-registry',
  'telegram-sender',
  'max-sender',
  'webhook-dispatcher',
  'gateway',
] as const;

/** The services with Kafka clients, and which of their counters must move when Telegram messages go through. */
const MUST_MOVE: Record<string, KafkaCounter[]> = {
  gateway: ['produceRequests', 'handlerBatches', 'fetches', 'commits', 'kafkaRequests'],
  'client-registry': ['produceRequests', 'handlerBatches', 'fetches', 'commits', 'kafkaRequests'],
  'telegram-sender': ['produceRequests', 'handlerBatches', 'fetches', 'commits', 'kafkaRequests'],
  // No MAX messages go through; its idle consumer still fetches.
  'max-sender': ['fetches', 'kafkaRequests'],
  'webhook-dispatcher': ['produceRequests', 'handlerBatches', 'fetches', 'commits', 'kafkaRequests'],
};
export const KAFKA_SERVICES = Object.keys(MUST_MOVE);

export interface Reading {
  kafka: Map<string, KafkaCounts>;
  /** The simulator's Bot API calls (updates polling included) and those it answered 429. */
  simulatorCalls: number;
  simulator429: number;
  /** telegram-sender's calls of the provider for messages. */
  sendAttempts: number;
  database: DatabaseCounters;
}

export async function readPipeline(stack: Stack): Promise<Reading> {
  const kafka = new Map<string, KafkaCounts>();
  await Promise.all(
    KAFKA_SERVICES.map(async (name) => kafka.set(name, await kafkaCounts(stack.service(name).opsUrl))),
  );
  const simulator = await Scrape.of(`${stack.service('messenger-simulator').opsUrl}/metrics`);
  const sender = await Scrape.of(`${stack.service('telegram-sender').opsUrl}/metrics`);
  return {
    kafka,
    simulatorCalls: simulator.sum('mds_simulator_api_calls_total'),
    simulator429: simulator.sum('mds_simulator_api_calls_total', 'status="429"'),
    sendAttempts: sender.sum('mds_sender_attempts_total'),
    database: await databaseCounters(stack.databaseUrl),
  };
}

export interface PipelineWork {
  delivered: number;
  /** Per service, each Kafka counter per message delivered. */
  kafka: Map<string, KafkaCounts>;
  /** Over every service, per message. */
  kafkaTotal: KafkaCounts;
  simulatorCalls: number;
  simulator429: number;
  sendAttempts: number;
  database: DatabaseWork;
}

/**
 * The work between two readings per message delivered meanwhile. Fails, naming the counter and its URL,
 * when messages went through and a counter that counts their work did not move.
 */
export function workBetween(
  stack: Stack,
  before: Reading,
  after: Reading,
  delivered: number,
  /** perMessage false: the counts themselves (delivered is then only what must have moved them). */
  o: { perMessage?: boolean } = {},
): PipelineWork {
  const per = o.perMessage === false ? 1 : delivered;
  const kafka = new Map<string, KafkaCounts>();
  const moved: Parameters<typeof requireMoved>[1] = [];
  const total = {} as KafkaCounts;
  for (const [name, counts] of after.kafka) {
    const diff = difference(before.kafka.get(name)!, counts);
    for (const counter of MUST_MOVE[name] ?? [])
      moved.push({ what: name, url: `${stack.service(name).opsUrl}/metrics`, counter, by: diff[counter] });
    const each = Object.fromEntries(
      Object.entries(diff).map(([k, v]) => [k, per > 0 ? v / per : NaN]),
    ) as KafkaCounts;
    kafka.set(name, each);
    for (const [k, v] of Object.entries(each)) total[k as KafkaCounter] = (total[k as KafkaCounter] ?? 0) + v;
  }
  const simulatorUrl = `${stack.service('messenger-simulator').opsUrl}/metrics`;
  const senderUrl = `${stack.service('telegram-sender').opsUrl}/metrics`;
  moved.push(
    {
      what: 'messenger-simulator',
      url: simulatorUrl,
      counter: 'mds_simulator_api_calls_total',
      by: after.simulatorCalls - before.simulatorCalls,
    },
    {
      what: 'telegram-sender',
      url: senderUrl,
      counter: 'mds_sender_attempts_total',
      by: after.sendAttempts - before.sendAttempts,
    },
  );
  const database = databaseWork(before.database, after.database, per);
  moved.push(
    {
      what: 'PostgreSQL',
      url: stack.databaseUrl,
      counter: 'pg_stat_database.xact_commit',
      by: database.transactions,
    },
    {
      what: 'PostgreSQL',
      url: stack.databaseUrl,
      counter: 'pg_stat_user_tables rows written',
      by: database.rows,
    },
  );
  requireMoved(delivered, moved);
  return {
    delivered,
    kafka,
    kafkaTotal: total,
    simulatorCalls: after.simulatorCalls - before.simulatorCalls,
    simulator429: after.simulator429 - before.simulator429,
    sendAttempts: after.sendAttempts - before.sendAttempts,
    database,
  };
}

/** The Kafka lines of a phase's report: per service, each counter per message. */
export function printKafkaWork(work: PipelineWork): void {
  const f = (v: number) => v.toFixed(2);
  const each = (a: number, b: number) => (b > 0 ? (a / b).toFixed(1) : '-');
  console.log(
    '  Kafka per message: produce requests (records each), handler batches (events each), fetches, offset commits; all requests:',
  );
  for (const [name, k] of work.kafka)
    console.log(
      `    ${name.padEnd(20)} produce ${f(k.produceRequests)} (${each(k.recordsProduced, k.produceRequests)})` +
        `   handle ${f(k.handlerBatches)} (${each(k.eventsConsumed, k.handlerBatches)})` +
        `   fetch ${f(k.fetches)}   commit ${f(k.commits)}   requests ${f(k.kafkaRequests)}`,
    );
  const t = work.kafkaTotal;
  console.log(
    `    all services: ${f(t.produceRequests)} produce, ${f(t.fetches)} fetch, ${f(t.commits)} commit; ${t.kafkaRequests.toFixed(1)} Kafka requests of every kind per message`,
  );
  console.log(
    `  simulator: ${work.simulatorCalls} Bot API calls (updates polling included), ${work.simulator429} answered 429; ` +
      `telegram-sender: ${work.sendAttempts} send attempts for ${work.delivered} messages`,
  );
}
