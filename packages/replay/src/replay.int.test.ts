import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { topics, type StreamRecord, allTopics } from '@mds/contracts';
import { openDatabase } from '@mds/db';
import {
  createEventPublisher,
  createKafkaClient,
  provisionTopics,
  topicName,
  type KafkaSettings,
  type OutgoingEvent,
} from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { foldInto, summarize, type EventState, type StateRecord } from '@mds/message-state';
import { allStates } from '@mds/message-state/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syntheticCheck, syntheticMessages, syntheticOthers } from '../test/synthetic.js';
import { exportLog } from './export.js';
import { queryExport, REPORTS } from './query.js';
import { NotFreshError, rebuildEventStates, replayStates, summaryOf } from './replay.js';

const run = promisify(execFile);
const logger = createLogger({ service: 'replay-test', level: 'silent' });
const kafka = createKafkaClient({ brokers: testInfra().kafkaBrokers, clientId: 'replay-test' }, logger);
const topicPrefix = `${uniqueName('replay')}.`;
const settings = (prefix = topicPrefix): KafkaSettings => ({
  brokers: testInfra().kafkaBrokers,
  clientId: 'replay-test',
  topicPrefix: prefix,
});
const T0 = new Date('2026-01-01T00:00:00Z');
const { events: messages, expected } = syntheticMessages(60, {
  companies: ['c1', 'c2'],
  start: T0,
  stepMs: 1_000,
});
const checks = syntheticCheck('c1', new Date(T0.getTime() + 30_000));
// The other streams' events, a day later (a second day= folder).
const others = syntheticOthers('c1', new Date(T0.getTime() + 86_400_000));
const all = [...messages, ...checks, ...others] as OutgoingEvent<StreamRecord>[];
const stateEvents = [...messages, ...checks] as OutgoingEvent<StreamRecord>[];
const records = stateEvents.map((e) => e.record as StateRecord);
let out: string;
const schemas: string[] = [];

async function publish(prefix: string, events: OutgoingEvent<StreamRecord>[]) {
  const publisher = createEventPublisher({ kafka, logger, topicPrefix: prefix });
  await publisher.connect();
  await publisher.publish(events);
  await publisher.disconnect();
}

const incrementalPrefix = `${uniqueName('incremental')}.`;

beforeAll(async () => {
  await provisionTopics(kafka, allTopics(), { prefix: incrementalPrefix, partitions: 2 });
  await provisionTopics(kafka, allTopics(), { prefix: topicPrefix, partitions: 3 });
  await publish(topicPrefix, all);
  out = await mkdtemp(join(tmpdir(), 'mds-replay-'));
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
  if (schemas.length > 0) {
    const db = await openDatabase({ url: testInfra().databaseUrl, schema: 'public' });
    for (const schema of schemas) await db.raw('drop schema if exists ?? cascade', [schema]);
    await db.destroy();
  }
});

async function query<T extends unknown[]>(sql: string): Promise<T[]> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    return (await connection.runAndReadAll(sql)).getRows() as T[];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

const byId = (states: Iterable<EventState>) => [...states].sort((a, b) => a.eventId.localeCompare(b.eventId));

async function files(dir: string): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || entry.parentPath.includes('.mds-replay')) continue;
    const path = join(entry.parentPath, entry.name);
    found.set(path.slice(dir.length), await readFile(path));
  }
  return found;
}

describe('summary', () => {
  it('counts messages by state, error code, messenger and bot, with accepted -> sent percentiles', async () => {
    const s = await summaryOf({ settings: settings() });
    expect(s.events).toBe(stateEvents.length);
    expect(s.messages.byState).toEqual(expected);
    expect(Object.values(s.messages.byErrorCode).reduce((a, b) => a + b, 0)).toBe(expected.failed);
    expect(s.messages.byMessenger).toEqual({ telegram: 30, max: 30 });
    expect(s.messages.byBot['telegram/(default)']).toBe(10);
    expect(s.messages.acceptedToSentMs?.count).toBe(expected.sent);
    expect(s.requests).toEqual({ 'client_check/checked': 1 });
  });

  it('is the summary of the folded states, in one thread or several', async () => {
    const whole = summarize(foldInto(new Map(), records).values());
    for (const threads of [0, 2]) {
      const { events, ...summary } = await summaryOf({ settings: settings(), threads });
      expect(events).toBe(stateEvents.length);
      expect(summary).toEqual(whole);
    }
  });
});

describe('worker threads sharded by partition', () => {
  it('fold to the same states as one thread, and export the same bytes', async () => {
    const one = await replayStates({ settings: settings(), threads: 0 });
    const two = await replayStates({ settings: settings(), threads: 2 });
    expect(two.events).toBe(one.events);
    expect(byId(two.states.values())).toEqual(byId(one.states.values()));
    expect(byId(one.states.values())).toEqual(byId(foldInto(new Map(), records).values()));
    const a = join(out, 'single');
    const b = join(out, 'sharded');
    await exportLog({ settings: settings(), out: a, threads: 0 });
    await exportLog({ settings: settings(), out: b, threads: 3 });
    const [fa, fb] = [await files(a), await files(b)];
    expect([...fb.keys()].sort()).toEqual([...fa.keys()].sort());
    expect(fa.size).toBeGreaterThan(20);
    for (const [name, bytes] of fa) expect(fb.get(name)?.equals(bytes), name).toBe(true);
  });
});

describe('export', () => {
  it('writes typed tables of every stream, by day, and the folded tables, owner-only; DuckDB reads them back', async () => {
    const dir = join(out, 'all');
    const result = await exportLog({ settings: settings(), out: dir });
    expect(result.events).toBe(all.length);
    expect(result.tables).toMatchObject({
      events: all.length,
      message_accepted: 60,
      company_created: 1,
      client_linked: 1,
      contact_shared: 1,
      webhook_attempted: 3,
      messages: 60,
      requests: 1,
      webhook_attempts: 3,
      links: 1,
    });
    expect(await readdir(join(dir, 'parquet/events'))).toEqual(['day=2026-01-01', 'day=2026-01-02']);
    // Owner-only: every folder 0700, every file 0600.
    for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
      const mode = (await stat(join(entry.parentPath, entry.name))).mode & 0o777;
      expect(mode, join(entry.parentPath, entry.name)).toBe(entry.isDirectory() ? 0o700 : 0o600);
    }
    expect((await stat(dir)).mode & 0o777).toBe(0o700);

    const r = await queryExport(
      dir,
      `select typeof(occurred_at), typeof(day), messenger, phone_number, count(text)::integer, count(*)::integer
       from message_accepted where company_id = 'c1' group by all order by messenger`,
    );
    expect(r.rows).toEqual([['TIMESTAMP WITH TIME ZONE', 'DATE', 'telegram', '79123456789', 30, 30]]);
    const states = await queryExport(
      dir,
      `select state, count(*)::integer from messages group by all order by 1`,
    );
    expect(Object.fromEntries(states.rows as [string, number][])).toEqual(expected);
    const tagged = await queryExport(
      dir,
      `select count(*)::integer, min(metadata->>'$.values.order') from messages where metadata is not null`,
    );
    expect(tagged.rows).toEqual([[20, 'o-0']]);
    // Messages with a fallback (i % 10 = 1): Telegram's shop bot decided each, after its own channel.
    const channels = await queryExport(
      dir,
      `select channel_messenger, channel_bot_name, channel_attempts::varchar, count(*)::integer from messages
       where channel_messenger is not null group by all order by all`,
    );
    expect(channels.rows).toEqual(
      [
        ['{"service":"max","bot_name":"shop","error_code":"CLIENT_NOT_FOUND"}', 2],
        ['{"service":"max","bot_name":"support","error_code":"CLIENT_NOT_FOUND"}', 2],
        ['{"service":"max","error_code":"CLIENT_NOT_FOUND"}', 2],
      ].map(([attempt, n]) => ['telegram', 'shop', `[${attempt as string}]`, n]),
    );
    const steps = await queryExport(
      dir,
      `select route_current_messenger, attempt_error_code, count(*)::integer from message_attempt_failed group by all`,
    );
    expect(steps.rows).toEqual([['max', 'CLIENT_NOT_FOUND', 6]]);
    const link = await queryExport(
      dir,
      'select phone_number, messenger, chat_id, state, reachable, unreachable_reason from links',
    );
    expect(link.rows).toEqual([['79120000002', 'telegram', '1001', 'linked', false, 'blocked']]);
    const attempts = await queryExport(
      dir,
      'select url, attempt, status_code, outcome, delivery_outcome from webhook_attempts order by url, attempt',
    );
    expect(attempts.rows).toEqual([
      ['https://a.example/hook', 1n, 503n, 'retryable', 'delivered'],
      ['https://a.example/hook', 2n, 200n, 'succeeded', 'delivered'],
      ['https://b.example/hook', 1n, 500n, 'gave_up', 'abandoned'],
    ]);
    const csv = await query<[bigint]>(`select count(*) from read_csv('${dir}/csv/events/**/*.csv')`);
    expect(Number(csv[0]![0])).toBe(all.length);
  });

  it('exports only the streams asked for, one company, from a time', async () => {
    const dir = join(out, 'c2');
    const from = new Date(T0.getTime() + 30_000);
    const result = await exportLog({
      settings: settings(),
      out: dir,
      companyId: 'c2',
      from,
      streams: ['message'],
      formats: ['parquet'],
    });
    const expectedCount = messages.filter(
      (e) => e.record.metadata.companyId === 'c2' && e.record.metadata.occurredAt! >= from,
    ).length;
    expect(result.events).toBe(expectedCount);
    expect(Object.keys(result.tables).sort()).toEqual([
      'events',
      'message_accepted',
      'message_attempt_failed',
      'message_delivery_failed',
      'message_sent',
      'messages',
    ]);
    expect(await readdir(dir)).toEqual(['.mds-replay', 'parquet']);
  });

  it('--since-last appends exactly the new events, and a repeat appends nothing', async () => {
    const prefix = incrementalPrefix;
    const first = syntheticMessages(10, { companies: ['c1'], start: T0 });
    await publish(prefix, first.events);
    const dir = join(out, 'incremental');
    expect((await exportLog({ settings: settings(prefix), out: dir, sinceLast: true })).events).toBe(
      first.events.length,
    );
    const second = syntheticMessages(5, { companies: ['c1'], start: new Date(T0.getTime() + 86_400_000) });
    const others2 = syntheticOthers('c1', T0);
    await publish(prefix, [...second.events, ...others2] as OutgoingEvent<StreamRecord>[]);
    const next = await exportLog({ settings: settings(prefix), out: dir, sinceLast: true });
    expect(next).toMatchObject({ resumed: true, events: second.events.length + others2.length });
    const again = await exportLog({ settings: settings(prefix), out: dir, sinceLast: true });
    expect(again.events).toBe(0);
    const total = first.events.length + second.events.length + others2.length;
    const counted = await queryExport(
      dir,
      'select count(*)::integer, count(distinct event_id)::integer from events',
    );
    expect(counted.rows).toEqual([[total, total]]);
    const m = await queryExport(dir, 'select count(*)::integer from messages');
    expect(m.rows).toEqual([[15]]);
    await expect(
      exportLog({ settings: settings(prefix), out: dir, sinceLast: true, streams: ['message'] }),
    ).rejects.toThrow(/--since-last must export the same ones/);
  });
});

describe('query', () => {
  it('answers the named reports', async () => {
    const dir = join(out, 'all');
    const rate = await queryExport(dir, REPORTS['delivery-rate']!.sql);
    expect(rate.columns).toEqual([
      'company_id',
      'day',
      'messages',
      'sent',
      'failed',
      'pending',
      'delivered_pct',
    ]);
    const sentBy = (company: string) =>
      messages.filter(
        (e) => e.record.metadata.companyId === company && e.record.event.$case === 'messageSent',
      ).length;
    expect(rate.rows.map((r) => [r[0], r[1], Number(r[2]), Number(r[3])])).toEqual([
      ['c1', '2026-01-01', 30, sentBy('c1')],
      ['c2', '2026-01-01', 30, sentBy('c2')],
    ]);
    const failures = await queryExport(dir, REPORTS['failures-by-bot']!.sql);
    expect(failures.rows.reduce((n, r) => n + Number(r[3]), 0)).toBe(expected.failed);
    const latency = await queryExport(dir, REPORTS['latency-by-hour']!.sql);
    expect(latency.rows.map((r) => Number(r[1]))).toEqual([expected.sent + expected.failed]);
    const hooks = await queryExport(dir, REPORTS['webhook-failures']!.sql);
    expect(hooks.rows.map((r) => [r[0], Number(r[1]), Number(r[2]), r[3], Number(r[4])])).toEqual([
      ['https://b.example/hook', 1, 1, 100, 1],
      ['https://a.example/hook', 2, 1, 50, 0],
    ]);
  });
});

describe('rebuild', () => {
  it('rebuilds the read model into a fresh schema, equal to the fold of every event, and refuses a used one', async () => {
    const schema = uniqueName('rebuilt').toLowerCase();
    schemas.push(schema);
    const { databaseUrl } = testInfra();
    expect(await rebuildEventStates({ settings: settings(), databaseUrl, schema })).toEqual({
      events: stateEvents.length,
      states: 61,
    });
    const db = await openDatabase({ url: databaseUrl, schema });
    try {
      expect(await allStates(db)).toEqual(byId(foldInto(new Map(), records).values()));
    } finally {
      await db.destroy();
    }
    await expect(rebuildEventStates({ settings: settings(), databaseUrl, schema })).rejects.toThrow(
      NotFreshError,
    );
  });
});

describe('a log trimmed by retention', () => {
  it('is reported, and the states are folded from what is left', async () => {
    const prefix = `${uniqueName('trimmed')}.`;
    await provisionTopics(kafka, [topics.message, topics.clientRequest], { prefix, partitions: 1 });
    const { events } = syntheticMessages(10, { companies: ['c1'], start: T0 });
    await publish(prefix, events);
    const admin = kafka.admin();
    await admin.connect();
    await admin.fetchTopicMetadata({ topics: [topicName(topics.message, prefix)] });
    await admin.deleteTopicRecords({
      topic: topicName(topics.message, prefix),
      partitions: [{ partition: 0, offset: '1' }],
    });
    await admin.disconnect();
    const trimmed: string[][] = [];
    const s = await summaryOf({ settings: settings(prefix), onTrimmed: (p) => trimmed.push(p) });
    expect(trimmed).toEqual([[`${topicName(topics.message, prefix)}/0`]]);
    expect(s.events).toBe(events.length - 1);
    expect(s.messages.total).toBe(10);
    expect(s.messages.acceptedToSentMs?.count).toBe(6);
  });
});

describe('mds-replay, as a person runs it (the bin, also through a symlink)', () => {
  const bin = join(import.meta.dirname, '../bin/mds-replay.js');
  const env = () => ({
    PATH: process.env.PATH ?? '',
    KAFKA_BROKERS: testInfra().kafkaBrokers.join(','),
    KAFKA_TOPIC_PREFIX: topicPrefix,
    DATABASE_URL: testInfra().databaseUrl,
  });
  const mds = async (args: string[], via = bin) => {
    try {
      const r = await run(process.execPath, [via, ...args], { env: env() });
      return { code: 0, ...r };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };

  it('prints help with exit 0 for every command, its version, and suggests what was meant', async () => {
    const help = await mds(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: mds-replay \[options\] \[command\]/);
    for (const command of ['export', 'query', 'rebuild', 'summary']) {
      const h = await mds([command, '-h']);
      expect(h.code, command).toBe(0);
      expect(h.stdout).toContain(`Usage: mds-replay ${command}`);
    }
    expect((await mds(['query', '--help'])).stdout).toContain('webhook-failures');
    expect((await mds(['--version'])).stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    const typo = await mds(['exprot', '--out', 'x']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('(Did you mean export?)');
    const missing = await mds(['export']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("required option '--out <dir>' not specified");
    const badTime = await mds(['summary', '--from', 'yesterday']);
    expect(badTime.code).toBe(2);
    expect(badTime.stderr).toContain('expected an ISO 8601 time');
    expect((await mds([])).code).toBe(2);
  });

  it('exports, queries with a report (table, CSV, JSON) and names what failed, without log lines', async () => {
    const dir = join(out, 'cli');
    const link = join(out, 'mds-replay-link');
    await symlink(bin, link);
    const exported = await mds(
      ['export', '--out', dir, '--company', 'c1', '--streams', 'message,webhook'],
      link,
    );
    expect(exported.code).toBe(0);
    expect(exported.stdout).toMatch(/^exported \d+ events to /);
    expect(exported.stderr).not.toContain('{"level"');
    const table = await mds(['query', '--dir', dir, '--report', 'webhook-failures']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^url\s+attempts\s+failed_attempts/);
    expect(table.stdout).toContain('https://a.example/hook');
    const csv = await mds([
      'query',
      '--dir',
      dir,
      '--output',
      'csv',
      'select state, count(*) as n from messages group by 1 order by 1',
    ]);
    expect(csv.stdout.trim().split('\n')[0]).toBe('state,n');
    const json = await mds(['query', '--dir', dir, '--json', 'select count(*) as n from messages']);
    expect(JSON.parse(json.stdout)).toEqual([{ n: 30 }]);
    const wrong = await mds(['query', '--dir', dir, 'select * from nope']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/nope[\s\S]*tables in .*: events, message_accepted/);
    const noExport = await mds(['query', '--dir', join(out, 'nothing-here'), 'select 1']);
    expect(noExport.stderr).toContain('holds no export');
    const summary = await mds(['summary', '--json', '--company', 'c2']);
    expect((JSON.parse(summary.stdout) as { messages: { total: number } }).messages.total).toBe(30);
    const badBroker = await run(process.execPath, [bin, 'summary'], { env: { PATH: '' } }).then(
      () => ({ code: 0, stderr: '' }),
      (e: { code: number; stderr: string }) => e,
    );
    expect(badBroker.code).toBe(2);
    expect(badBroker.stderr).toContain('KAFKA_BROKERS');
    const schema = uniqueName('used').toLowerCase();
    schemas.push(schema);
    expect((await mds(['rebuild', '--schema', schema, '--no-progress'])).code).toBe(0);
    const again = await mds(['rebuild', '--schema', schema]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`schema ${schema} already has a non-empty event_states`);
  });
});
