import { deliveryTopic, messengers, topics, type TopicSpec } from '@mds/contracts';
import type { Knex } from '@mds/db';
import {
  createEventConsumer,
  type createKafkaClient,
  type DeadLetterSink,
  type EventConsumer,
  type KafkaMetrics,
} from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { randomUUID } from 'node:crypto';
import { applyProjected } from '../../adapters/db/projection-store.js';
import { reportLag } from '../../adapters/db/read-model-lag.js';
import { projectEvent, type DashboardRecord, type ProjectedEvent } from '../../domain/projection.js';
import { openRecords, rememberSubjects, subjectRowsOf, type PersonKeyPort } from '@mds/personal-data';

/**
 * The streams the pages are built from: messages, where they went (a delivery topic per messenger of the
 * catalogue, read when the consumer is made), their webhooks, requests, bot updates.
 */
export function readModelTopics(): TopicSpec[] {
  return [
    topics.message,
    ...messengers().map((m) => deliveryTopic(m.name)),
    topics.webhook,
    topics.clientRequest,
    topics.botUpdate,
  ] as TopicSpec[];
}

/**
 * The consumer that folds the log into the dashboard's read models. Offsets move only after a batch's
 * effects are committed; every effect is idempotent, so a batch that comes again changes nothing.
 */
export function createReadModelConsumer(o: {
  kafka: ReturnType<typeof createKafkaClient>;
  logger: Logger;
  db: Knex;
  deadLetters: DeadLetterSink;
  topicPrefix: string;
  metrics?: KafkaMetrics;
  /** Opens the numbers and texts sealed in events; without it they stay sealed (empty in the pages). */
  personKeys?: PersonKeyPort;
}): EventConsumer {
  return createEventConsumer<DashboardRecord>({
    kafka: o.kafka,
    logger: o.logger,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    groupId: `${o.topicPrefix}dashboard.read-models`,
    topicPrefix: o.topicPrefix,
    topics: readModelTopics() as never,
    deadLetters: o.deadLetters,
    handleBatch: async (events) => {
      const sealed = events.map((e) => e.record);
      const records = o.personKeys ? await openRecords(o.personKeys, sealed) : sealed;
      // Rows of a message or request are found by its id (the subject of its timeline).
      await rememberSubjects(
        o.db,
        subjectRowsOf(records, (r) =>
          r.event?.$case === 'deliveryRequested' ? undefined : r.metadata?.streamId.toLowerCase(),
        ),
      );
      await applyProjected(
        o.db,
        records.map((r) => projectEvent(r)).filter((p): p is ProjectedEvent => p !== undefined),
      );
    },
  });
}

/**
 * Reports, every `everyMs`, how far behind this replica's read-model consumer is on the partitions it owns,
 * to the table every replica's pages read the whole group's lag from. Answers the function that stops it.
 */
export function reportReadModelLag(o: {
  consumer: EventConsumer;
  db: Knex;
  logger: Logger;
  now: () => Date;
  everyMs: number;
}): () => void {
  const replica = randomUUID();
  let reporting: Promise<void> | undefined;
  const timer = setInterval(() => {
    reporting ??= reportLag(o.db, replica, o.consumer.lag(), o.now())
      .catch((error: unknown) => o.logger.warn({ err: error }, "could not report the read models' lag"))
      .finally(() => (reporting = undefined));
  }, o.everyMs);
  return () => clearInterval(timer);
}
