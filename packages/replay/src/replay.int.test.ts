import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { topics, type StreamRecord } from '@mds/contracts';
import { openDatabase } from '@mds/db';
import {
  createEventPublisher,
  createKafkaClient,
  provisionTopics,
  topicName,
  type OutgoingEvent,
} from '@mds/kafka';
import { createLogger } from '@mds/logging';
import { testInfra, uniqueName } from '@mds/local-infra/testing';
import { foldInto, type EventState, type StateRecord } from '@mds/message-state';
import { allStates } from '@mds/message-state/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { syntheticCheck, syntheticMessages } from '../test/synthetic.js';
import { run } from './cli.js';
import { exportEvents } from './export.js';
import { NotFreshError, rebuildEventStates, summaryOf, trimmedPartitions } from './replay.js';

const logger = createLogger({ service: 'replay-test', level: 'silent' });
const kafka = createKafkaClient({ brokers: testInfra().kafkaBrokers, clientId: 'replay-test' }, logger);
const topicPrefix = `${uniqueName('replay')}.`;
const T0 = new Date('2026-01-01T00:00:00Z');
const { events: messages, expected } = syntheticMessages(60, {
  companies: ['c1', 'c2'],
  start: T0,
  stepMs: 1_000,
});
const checks = syntheticCheck('c1', new Date(T0.getTime() + 30_000));
const all = [...messages, ...checks] as OutgoingEvent<StreamRecord>[];
const records = all.map((e) => e.record as StateRecord);
let out: string;
const schemas: string[] = [];

beforeAll(async () => {
  await provisionTopics(kafka, [topics.message, topics.clientRequest], {
    prefix: topicPrefix,
    partitions: 3,
  });
  const publisher = createEventPublisher({ kafka, logger, topicPrefix });
  await publisher.connect();
  await publisher.publish(all);
  await publisher.disconnect();
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

async function one<T extends unknown[]>(sql: string): Promise<T> {
  return (await query<T>(sql))[0]!;
}

const byId = (states: Iterable<EventState>) => [...states].sort((a, b) => a.eventId.localeCompare(b.eventId));

describe('summary', () => {
  it('counts messages by state, error code, messenger and bot, with accepted -> sent percentiles', async () => {
    const s = await summaryOf({ kafka, logger, topicPrefix });
    expect(s.events).toBe(all.length);
    expect(s.messages.byState).toEqual(expected);
    expect(Object.values(s.messages.byErrorCode).reduce((a, b) => a + b, 0)).toBe(expected.failed);
    expect(s.messages.byMessenger).toEqual({ telegram: 30, max: 30 });
    expect(s.messages.byBot['telegram/(default)']).toBe(10);
    expect(s.messages.acceptedToSentMs?.count).toBe(expected.sent);
    expect(s.messages.acceptedToSentMs!.max).toBeLessThan(1_000);
    expect(s.requests).toEqual({ 'client_check/checked': 1 });
  });
});

describe('export', () => {
  it('writes every event and every derived state to Parquet and CSV that DuckDB reads back', async () => {
    const dir = join(out, 'all');
    const result = await exportEvents({ kafka, logger, topicPrefix, out: dir });
    expect(result).toMatchObject({ events: all.length, states: 61 });
    expect(result.files.map((f) => f.slice(dir.length + 1)).sort()).toEqual([
      'events.csv',
      'events.parquet',
      'states.csv',
      'states.parquet',
    ]);
    const [events, types] = await one<[bigint, string]>(
      `select count(*), string_agg(distinct type, ',' order by type) from '${dir}/events.parquet'`,
    );
    expect(Number(events)).toBe(all.length);
    expect(types).toBe(
      'ClientCheckRequested,ClientChecked,MessageAccepted,MessageDeliveryFailed,MessageSent',
    );
    const states = await query<[string, number]>(
      `select state, count(*)::integer from '${dir}/states.parquet' where kind = 'message' group by state order by state`,
    );
    expect(Object.fromEntries(states)).toEqual({
      failed: expected.failed,
      new: expected.new,
      sent: expected.sent,
    });
    // One message, field by field, against the fold of its own events.
    const first = messages[0]!.record;
    const state = foldInto(new Map(), records).get(first.metadata.streamId)!;
    const [row] = await query<[string, string, string, string, bigint, string]>(
      `select company_id, state, messenger, bot_name, accepted_to_finished_ms, json_extract_string(history, '$[0].type')
       from '${dir}/states.parquet' where event_id = '${state.eventId}'`,
    );
    expect(row).toEqual([state.companyId, state.status, state.messenger, null, 0n, 'MessageAccepted']);
    const [csvEvents] = await one<[bigint]>(`select count(*) from read_csv('${dir}/events.csv')`);
    expect(Number(csvEvents)).toBe(all.length);
    expect((await readFile(join(dir, 'states.csv'), 'utf8')).trim().split('\n')).toHaveLength(62);
  });

  it("keeps only one company's events from a given time", async () => {
    const dir = join(out, 'c2');
    const from = new Date(T0.getTime() + 30_000);
    const result = await exportEvents({
      kafka,
      logger,
      topicPrefix,
      out: dir,
      companyId: 'c2',
      from,
      formats: ['parquet'],
    });
    const wanted = records.filter((r) => r.metadata.companyId === 'c2' && r.metadata.occurredAt! >= from);
    expect(result.events).toBe(wanted.length);
    expect(result.files).toEqual([join(dir, 'events.parquet'), join(dir, 'states.parquet')]);
    const ids = await query<[string]>(`select event_id from '${dir}/events.parquet' order by event_id`);
    expect(ids.map(([id]) => id)).toEqual(wanted.map((r) => r.metadata.eventId).sort());
    const [companies] = await one<[string]>(
      `select string_agg(distinct company_id) from '${dir}/states.parquet'`,
    );
    expect(companies).toBe('c2');
  });
});

describe('rebuild', () => {
  it('rebuilds the read model into a fresh schema, equal to the fold of every event, and refuses a used one', async () => {
    const schema = uniqueName('rebuilt').toLowerCase();
    schemas.push(schema);
    const { databaseUrl } = testInfra();
    expect(await rebuildEventStates({ kafka, logger, topicPrefix, databaseUrl, schema })).toEqual({
      events: all.length,
      states: 61,
    });
    const db = await openDatabase({ url: databaseUrl, schema });
    try {
      expect(await allStates(db)).toEqual(byId(foldInto(new Map(), records).values()));
    } finally {
      await db.destroy();
    }
    await expect(rebuildEventStates({ kafka, logger, topicPrefix, databaseUrl, schema })).rejects.toThrow(
      NotFreshError,
    );
  });
});

describe('a log trimmed by retention', () => {
  it('is reported, and the states are folded from what is left', async () => {
    const prefix = `${uniqueName('trimmed')}.`;
    await provisionTopics(kafka, [topics.message, topics.clientRequest], { prefix, partitions: 1 });
    const publisher = createEventPublisher({ kafka, logger, topicPrefix: prefix });
    await publisher.connect();
    const { events } = syntheticMessages(10, { companies: ['c1'], start: T0 });
    await publisher.publish(events);
    await publisher.disconnect();
    expect(await trimmedPartitions({ kafka, topicPrefix: prefix })).toEqual([]);
    // Retention deletes from the start of a partition: here, the first message's acceptance.
    const admin = kafka.admin();
    await admin.connect();
    await admin.fetchTopicMetadata({ topics: [topicName(topics.message, prefix)] });
    await admin.deleteTopicRecords({
      topic: topicName(topics.message, prefix),
      partitions: [{ partition: 0, offset: '1' }],
    });
    await admin.disconnect();
    expect(await trimmedPartitions({ kafka, topicPrefix: prefix })).toEqual([
      `${topicName(topics.message, prefix)}/0`,
    ]);
    const s = await summaryOf({ kafka, logger, topicPrefix: prefix });
    expect(s.events).toBe(events.length - 1);
    expect(s.messages.total).toBe(10);
    // The first message is still sent, but its latency is unknown without its acceptance.
    expect(s.messages.acceptedToSentMs?.count).toBe(6);
  });
});

describe('mds-replay', () => {
  const env = () => ({
    KAFKA_BROKERS: testInfra().kafkaBrokers.join(','),
    KAFKA_TOPIC_PREFIX: topicPrefix,
    DATABASE_URL: testInfra().databaseUrl,
    LOG_LEVEL: 'silent',
  });

  it('runs export from the command line', async () => {
    const dir = join(out, 'cli');
    expect(
      await run(['export', '--out', dir, '--format', 'csv', '--company', 'c1', '--no-progress'], env()),
    ).toBe(0);
    const [states] = await one<[bigint]>(`select count(*) from read_csv('${dir}/states.csv')`);
    expect(Number(states)).toBe(31);
  });

  it('exits 2 on a bad command line or a missing setting, 1 when the work fails', async () => {
    expect(await run(['rewind'], env())).toBe(2);
    expect(await run(['summary', '--from', 'yesterday'], env())).toBe(2);
    expect(await run(['summary'], {})).toBe(2);
    const schema = uniqueName('used').toLowerCase();
    schemas.push(schema);
    expect(await run(['rebuild', '--schema', schema, '--no-progress'], env())).toBe(0);
    expect(await run(['rebuild', '--schema', schema, '--no-progress'], env())).toBe(1);
  });
});
