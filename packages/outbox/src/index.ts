import pg from 'pg';
import { topics, type TopicKey } from '@mds/contracts';
import type { Knex } from '@mds/db';
import type { EventPublisher, OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';

/** How long a confirmation that the relay's lock is still held counts: at most this long relaying after losing it. */
const LEADERSHIP_CHECK_MS = 1_000;

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

/**
 * Moves outbox rows (table `outbox` in the service's schema: id, topic, key, payload) to Kafka in order. One replica relays at a time (a session advisory lock held on a
 * connection of its own), so events of one key keep their order; rows are deleted only once Kafka has
 * them, so a crash publishes them again (consumers drop copies by event id).
 */
export function createOutboxRelay(o: {
  /** The service: names the relay's lock and its database connection. */
  name: string;
  db: Knex;
  databaseUrl: string;
  publisher: EventPublisher;
  logger: Logger;
  pollMs?: number;
  batchSize?: number;
}): OutboxRelay {
  const pollMs = o.pollMs ?? 250;
  const batchSize = o.batchSize ?? 500;
  let lockClient: pg.Client | undefined;
  let leader = false;
  let running = false;
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;

  function dropLockClient(client: pg.Client): void {
    leader = false;
    if (lockClient === client) lockClient = undefined;
    client.end().catch(() => undefined);
  }

  /** True while relaying: the last pass worked (or there was nothing to do). */
  let lastPassOk = true;
  /** When the lock's session last answered. */
  let confirmedAt = 0;

  async function tryLead(): Promise<boolean> {
    if (leader && Date.now() - confirmedAt < LEADERSHIP_CHECK_MS) return true;
    if (leader) {
      // The lock lives as long as its session. A lock connection that died without a word (a half-open
      // TCP connection, a database failover) leaves this replica relaying while another takes the lock
      // and relays too, out of order. So the session must answer (within the query timeout) before a pass.
      const client = lockClient!; // a leader always has its lock connection (dropLockClient ends both)
      try {
        await client.query('select 1');
        confirmedAt = Date.now();
        return true;
      } catch (error) {
        o.logger.warn({ err: error }, 'outbox lock connection does not answer; no longer relaying');
        dropLockClient(client);
        throw error;
      }
    }
    if (!lockClient) {
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
    }
    const result = await lockClient.query<{ locked: boolean }>(
      'select pg_try_advisory_lock(hashtext($1)) as locked',
      [`${o.name}-outbox`],
    );
    leader = result.rows[0]!.locked;
    confirmedAt = Date.now();
    if (leader) o.logger.info('relaying the outbox');
    return leader;
  }

  async function relayOnce(): Promise<number> {
    const rows = await o
      .db('outbox')
      .orderBy('id')
      .limit(batchSize)
      .select<{ id: string; topic: string; key: string; payload: Buffer }[]>();
    if (rows.length === 0) return 0;
    const events = rows.map((row): OutgoingEvent => {
      const topic = topics[topicKeys.get(row.topic)!];
      // Published as stored, not encoded again: the record is decoded for its metadata (headers) only.
      const codec = { ...topic.codec, encode: () => row.payload };
      return {
        topic: { ...topic, codec },
        key: row.key,
        record: topic.codec.decode(row.payload),
      };
    });
    await o.publisher.publish(events);
    // Exactly these rows: one with a lower id may commit only now (ids are taken before commit).
    await o
      .db('outbox')
      .whereIn(
        'id',
        rows.map((r) => r.id),
      )
      .delete();
    return rows.length;
  }

  async function run(): Promise<void> {
    while (running) {
      let moved = 0;
      try {
        if (await tryLead()) moved = await relayOnce();
        lastPassOk = true;
      } catch (error) {
        lastPassOk = false;
        o.logger.error({ err: error }, 'outbox relay failed; retrying');
      }
      if (moved === batchSize) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  }

  return {
    start() {
      running = true;
      loop = run();
      return Promise.resolve();
    },
    poke: () => wake?.(),
    async stop() {
      running = false;
      wake?.();
      await loop;
      // Last rows committed before the stop still go out.
      if (leader) await relayOnce().catch(() => undefined);
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
    healthy: () => running && lastPassOk,
  };
}
