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
import { RelayLeadership } from './leadership.js';

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
  const leadership = new RelayLeadership(o.name, o.databaseUrl, o.logger);
  /** True while relaying: the last pass worked (or there was nothing to do). */
  let lastPassOk = true;

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
    await o.publisher.publish(
      events.filter((e) => e !== undefined),
      { timeoutMs: leadership.windowLeftMs() },
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
        const more = (await leadership.mayRelay()) ? await relayOnce() : false;
        lastPassOk = true;
        // A new leader waiting out its window tries again as soon as the window ends.
        return more || (await leadership.waitOutWindow());
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
      if (leadership.relaying()) await relayOnce().catch(() => undefined);
      await leadership.release();
    },
    healthy: () => lastPassOk,
  };
}
