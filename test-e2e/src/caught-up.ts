import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { eventually } from '@mds/local-infra/testing';
import type { Stack } from './harness.js';

// What no company may do to the others, checked from outside on a running stack: every consumer group of
// every service is caught up (its members' `mds_consumer_lag_*` on /metrics, and the dashboard's own view of
// its read models, `/api/freshness`), nothing is set aside in any service's dead_letters but what a test
// expects, and no log line holds a number or a text of the run. The hostile-input test and the soak share it.

/** The consumer groups each service runs (without the stack's topic prefix; the routing view's id dropped). */
export const CONSUMER_GROUPS: Readonly<Record<string, readonly string[]>> = {
  gateway: ['gateway.event-states', 'gateway.forget'],
  'client-registry': ['client-registry.routing', 'client-registry.links', 'client-registry.routing-view'],
  'webhook-dispatcher': ['webhook-dispatcher', 'webhook-dispatcher.forget'],
  dashboard: ['dashboard.read-models', 'dashboard.forget'],
  'telegram-sender': ['telegram-sender'],
  'max-sender': ['max-sender'],
};

export interface GroupLag {
  service: string;
  group: string;
  topic: string;
  records: number;
  seconds: number;
}

const LAG_LINE = /^mds_consumer_lag_(records|seconds)\{([^}]*)\} (\S+)$/gm;
const label = (labels: string, name: string) => new RegExp(`${name}="([^"]*)"`).exec(labels)?.[1] ?? '';

/** Every member's lag as its /metrics says, per service, group and topic (a replica that does not answer: none). */
export async function consumerLags(stack: Stack): Promise<GroupLag[]> {
  const all = await Promise.all(
    stack
      .processes()
      .filter(({ service }) => service in CONSUMER_GROUPS)
      .map(async ({ service, replica }) => {
        const text = await fetch(`${replica.opsUrl}/metrics`, { signal: AbortSignal.timeout(10_000) })
          .then((r) => r.text())
          .catch(() => '');
        const byKey = new Map<string, GroupLag>();
        for (const [, kind, labels, value] of text.matchAll(LAG_LINE)) {
          const group = label(labels!, 'group')
            .slice(stack.topicPrefix.length)
            .replace(/^(client-registry\.routing-view)\..*$/, '$1');
          const topic = label(labels!, 'topic');
          const key = `${group} ${topic}`;
          const lag = byKey.get(key) ?? { service, group, topic, records: 0, seconds: 0 };
          lag[kind as 'records' | 'seconds'] += Number(value);
          byKey.set(key, lag);
        }
        return [...byKey.values()];
      }),
  );
  return all.flat();
}

/** What is behind now: groups missing from a service's /metrics, groups with records or seconds to go. */
export async function behind(
  stack: Stack,
  dashboard?: (path: string) => Promise<Response>,
): Promise<string[]> {
  const lags = await consumerLags(stack);
  const problems: string[] = [];
  const running = new Set(stack.processes().map((p) => p.service));
  for (const [service, groups] of Object.entries(CONSUMER_GROUPS)) {
    if (!running.has(service)) continue;
    for (const group of groups)
      if (!lags.some((l) => l.service === service && l.group === group))
        problems.push(`${service}: no lag of ${group} on /metrics`);
  }
  for (const l of lags)
    if (l.records > 0 || l.seconds > 0)
      problems.push(`${l.service}: ${l.group} on ${l.topic} ${l.records} records, ${l.seconds} s behind`);
  if (dashboard) {
    const answer = await dashboard('/freshness');
    const body = (await answer.json().catch(() => ({}))) as {
      behind_seconds?: number;
      records_behind?: number;
    };
    if (answer.status !== 200 || body.behind_seconds !== 0 || body.records_behind !== 0)
      problems.push(`dashboard /api/freshness ${answer.status} ${JSON.stringify(body)}`);
  }
  return problems;
}

/**
 * Waits (bounded) until every consumer group is caught up (see `behind`); answers what was still behind at the
 * deadline (empty when all caught up).
 */
export async function everyGroupCaughtUp(
  stack: Stack,
  o: { dashboard?: (path: string) => Promise<Response>; timeoutMs: number },
): Promise<string[]> {
  let last: string[] = [];
  try {
    await eventually(
      'every consumer group caught up',
      async () => {
        last = await behind(stack, o.dashboard);
        if (last.length === 0) return true;
        await sleep(500);
        return false;
      },
      o.timeoutMs,
    );
  } catch {
    // `last` says what is behind.
  }
  return last;
}

/** Every row of every service's dead_letters in the stack's database: where it was read and why it was set aside. */
export async function setAside(
  databaseUrl: string,
): Promise<{ schema: string; source: string; topic: string; reason: string }[]> {
  const db = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    const { rows: schemas } = await db.query<{ schema: string }>(
      `select table_schema as schema from information_schema.tables where table_name = 'dead_letters'`,
    );
    const rows = [];
    for (const { schema } of schemas) {
      const found = await db.query<{ source: string; topic: string; reason: string }>(
        `select source, topic, reason from ${pg.escapeIdentifier(schema)}.dead_letters`,
      );
      rows.push(...found.rows.map((r) => ({ schema, ...r })));
    }
    return rows;
  } finally {
    await db.end();
  }
}

/**
 * The log lines of the stack's services (the simulator, which stands in for the messengers, aside) that hold
 * any of `needles` (phone numbers, texts), each with where it is and what it holds.
 */
export function logLinesHolding(stack: Stack, needles: readonly string[]): string[] {
  const found: string[] = [];
  for (const { service, replica } of stack.processes()) {
    if (service === 'messenger-simulator') continue;
    const lines = readFileSync(replica.logFile, 'utf8').split('\n');
    lines.forEach((line, n) => {
      const held = needles.filter((needle) => line.includes(needle));
      if (held.length)
        found.push(`${replica.label}:${n + 1} holds ${held.join(', ')}: ${line.slice(0, 300)}`);
    });
  }
  return found;
}
