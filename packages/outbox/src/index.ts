import pg from 'pg';
import { wakeableLoop } from '@mds/async';
import {
  topics,
  UndecodableEventError,
  type Complete,
  type StreamRecord,
  type TopicKey,
} from '@mds/contracts';
import { quarantine, type Knex } from '@mds/db';
import type { EventPublisher, OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { Counter, type Registry } from 'prom-client';

/** How often the relay's lock is confirmed at most: a pass starts only within this of the last confirmation. */
const LEADERSHIP_CHECK_MS = 1_000;
/**
 * How long a confirmation lets this replica publish: a pass's publish must end within it. A replica that
 * takes the lock waits this long before its first pass, so the one that lost it has surely finished.
 */
const LEADERSHIP_WINDOW_MS = 5_000;

const topicKeys = new Map(Object.entries(topics).map(([key, spec]) => [spec.name, key as TopicKey]));

/** The outbox table's columns, for the migration of a service that uses the outbox. */
export function outboxColumns(t: Knex.CreateTableBuilder): void {
  t.bigIncrements('id');
  t.text('topic').notNullable();
  t.text('key').notNullable();
  t.binary('payload').notNullable();
}

/** Stores events with the state change that caused them; the relay publishes them after commit. */
export async function appendToOutbox(trx: Knex.Transaction, events: OutgoingEvent[]): Promise<void> {
  if (events.length === 0) return;
  await trx('outbox').insert(
    events.map((e) => ({
      topic: e.topic.name,
      key: e.key,
      payload: Buffer.from(e.topic.codec.encode(e.record)),
    })),
  );
}

export interface OutboxRelay {
  start(): Promise<void>;
  /** Publish now rather than at the next poll (called after a commit that wrote to the outbox). */
  poke(): void;
  stop(): Promise<void>;
  /** False when its last pass failed (database or Kafka unreachable): /readyz reports it. */
  healthy(): boolean;
}

interface Row {
  id: string;
  topic: string;
  key: string;
  payload: Buffer;
}

/**
 * A row as an event to publish: its bytes as stored, with the headers of its envelope. An event of a type
 * this build does not know (written by a newer version during a rolling deploy) goes out as it is; consumers
 * that know it read it. Undefined for a row that is no record of its topic at all.
 */
function asEvent(row: Row): OutgoingEvent | undefined {
  const key = topicKeys.get(row.topic);
  if (!key) return undefined;
  const topic = topics[key];
  try {
    const metadata = topic.codec.envelope(row.payload);
    // Published as stored, never encoded again: the envelope is read for the headers only.
    const codec = { ...topic.codec, encode: () => row.payload };
    return { topic: { ...topic, codec }, key: row.key, record: { metadata } as Complete<StreamRecord> };
  } catch (error) {
    if (error instanceof UndecodableEventError) return undefined;
    throw error;
  }
}

/**
 * Moves outbox rows (table `outbox` in the service's schema: id, topic, key, payload) to Kafka in order. One
 * replica relays at a time (a session advisory lock held on a connection of its own), so events of one key
 * keep their order; rows are deleted only once Kafka has them, so a crash publishes them again (consumers
 * drop copies by event id). A row that is no event at all is set aside in `dead_letters` and the rest goes on.
 */
export function createOutboxRelay(o: {
  /** The service: names the relay's lock and its database connection. */
  name: string;
  db: Knex;
  databaseUrl: string;
  publisher: EventPublisher;
  logger: Logger;
  /** How long the relay sleeps when nobody pokes it (a row written by another replica waits this long). */
  pollMs?: number;
  batchSize?: number;
  /** The service's metrics: rows set aside are counted in mds_outbox_quarantined_total. */
  registry?: Registry;
  /** Rows set aside in `dead_letters`. */
  onQuarantined?: (rows: number) => void;
}): OutboxRelay {
  const batchSize = o.batchSize ?? 500;
  const quarantined =
    o.registry &&
    new Counter({
      name: 'mds_outbox_quarantined_total',
      help: 'Outbox rows that are no event this build can read, set aside in dead_letters (the rest goes on)',
      registers: [o.registry],
    });
  let lockClient: pg.Client | undefined;
  let leader = false;
  /** True while relaying: the last pass worked (or there was nothing to do). */
  let lastPassOk = true;
  /** When the lock's session last answered; a pass publishes only within the window after it. */
  let confirmedAt = 0;
  /** Before this, a replica that just took the lock does not publish (the last leader may still be). */
  let notBefore = 0;

  function dropLockClient(client: pg.Client): void {
    leader = false;
    if (lockClient === client) lockClient = undefined;
    client.end().catch(() => undefined);
  }

  async function lockConnection(): Promise<pg.Client> {
    if (lockClient) return lockClient;
    const client = new pg.Client({
      connectionString: o.databaseUrl,
      application_name: `${o.name}-outbox`,
      keepAlive: true,
      connectionTimeoutMillis: 5_000,
      query_timeout: 5_000,
    });
    client.on('error', (error) => {
      o.logger.warn({ err: error }, 'outbox lock connection lost');
      dropLockClient(client);
    });
    try {
      await client.connect();
    } catch (error) {
      // A client that never connected queues queries forever: drop it and try afresh next time.
      dropLockClient(client);
      throw error;
    }
    lockClient = client;
    return client;
  }

  /** Whether this replica may relay now: it holds the lock, and its session answered a moment ago. */
  async function mayRelay(): Promise<boolean> {
    if (leader && Date.now() - confirmedAt < LEADERSHIP_CHECK_MS) return Date.now() >= notBefore;
    const client = await lockConnection();
    if (leader) {
      // The lock lives as long as its session. A lock connection that died without a word (a half-open
      // TCP connection, a database failover) leaves this replica relaying while another takes the lock
      // and relays too, out of order. So the session must answer (within the query timeout) before a pass.
      try {
        await client.query('select 1');
      } catch (error) {
        o.logger.warn({ err: error }, 'outbox lock connection does not answer; no longer relaying');
        dropLockClient(client);
        throw error;
      }
      confirmedAt = Date.now();
      return Date.now() >= notBefore;
    }
    const result = await client.query<{ locked: boolean }>(
      'select pg_try_advisory_lock(hashtext($1)) as locked',
      [`${o.name}-outbox`],
    );
    leader = result.rows[0]!.locked;
    confirmedAt = Date.now();
    if (!leader) return false;
    notBefore = confirmedAt + LEADERSHIP_WINDOW_MS;
    o.logger.info('relaying the outbox');
    return false;
  }

  async function setAside(rows: Row[]): Promise<void> {
    await o.db.transaction(async (trx) => {
      await quarantine(
        trx,
        rows.map((r) => ({
          source: 'outbox',
          topic: r.topic,
          key: r.key,
          payload: r.payload,
          reason: `not a record of ${r.topic} (or an unknown topic) that this build can read`,
        })),
      );
      await trx('outbox')
        .whereIn(
          'id',
          rows.map((r) => r.id),
        )
        .delete();
    });
    quarantined?.inc(rows.length);
    o.onQuarantined?.(rows.length);
    o.logger.error({ rows: rows.map((r) => r.id) }, 'outbox rows set aside in dead_letters');
  }

  /** One pass: publishes a batch of rows in order and deletes them; true when more may be waiting. */
  async function relayOnce(): Promise<boolean> {
    const rows = await o
      .db('outbox')
      .orderBy('id')
      .limit(batchSize)
      .select<Row[]>('id', 'topic', 'key', 'payload');
    if (rows.length === 0) return false;
    const events = rows.map(asEvent);
    const poison = rows.filter((_r, i) => !events[i]);
    if (poison.length > 0) await setAside(poison);
    const good = rows.filter((_r, i) => events[i]);
    const window = confirmedAt + LEADERSHIP_WINDOW_MS - Date.now();
    await o.publisher.publish(
      events.filter((e) => e !== undefined),
      { timeoutMs: Math.max(1, window) },
    );
    // Exactly these rows: one with a lower id may commit only now (ids are taken before commit).
    await o
      .db('outbox')
      .whereIn(
        'id',
        good.map((r) => r.id),
      )
      .delete();
    return rows.length === batchSize;
  }

  const loop = wakeableLoop({
    idleMs: o.pollMs ?? 5_000,
    pass: async () => {
      try {
        const more = (await mayRelay()) ? await relayOnce() : false;
        lastPassOk = true;
        // A new leader waiting out its window tries again as soon as the window ends.
        return more || (leader && Date.now() < notBefore && (await sleepUntil(notBefore)));
      } catch (error) {
        lastPassOk = false;
        throw error;
      }
    },
    onError: (error) => o.logger.error({ err: error }, 'outbox relay failed; retrying'),
  });

  return {
    start() {
      loop.start();
      return Promise.resolve();
    },
    poke: () => loop.wake(),
    async stop() {
      await loop.stop();
      // Last rows committed before the stop still go out.
      if (leader && Date.now() >= notBefore) await relayOnce().catch(() => undefined);
      const client = lockClient;
      lockClient = undefined;
      leader = false;
      // end() waits for the server to close the session: a connection gone silent never would.
      if (client)
        await Promise.race([
          client.end().catch(() => undefined),
          new Promise((r) => setTimeout(r, 5_000).unref()),
        ]);
    },
    healthy: () => lastPassOk,
  };
}

async function sleepUntil(at: number): Promise<true> {
  await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
  return true;
}
