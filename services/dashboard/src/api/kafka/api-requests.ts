import { topics, type ApiRequestEvent } from '@mds/contracts';
import type { Knex } from '@mds/db';
import {
  createEventConsumer,
  type DeadLetterSink,
  type EventConsumer,
  type Kafka,
  type KafkaMetrics,
} from '@mds/kafka';
import type { Logger } from '@mds/logging';
import { storeApiRequests, type ApiRequestRow } from '../../adapters/db/api-requests-store.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The request log's record as a row; undefined for one that names no company or key (nothing to show it under). */
export function apiRequestRow(record: ApiRequestEvent): ApiRequestRow | undefined {
  const { metadata, event } = record;
  if (event?.$case !== 'apiRequestServed' || !metadata?.occurredAt) return undefined;
  if (!UUID.test(metadata.eventId) || !UUID.test(metadata.companyId) || !event.value.keyId) return undefined;
  const v = event.value;
  return {
    recordId: metadata.eventId,
    companyId: metadata.companyId,
    keyId: v.keyId,
    at: metadata.occurredAt,
    operation: v.operation,
    status: v.status,
    eventId: v.subjectEventId,
    requestId: v.requestId,
    durationMs: v.durationMs,
  };
}

/**
 * Folds the API request log (mds.api-requests.v1) into each key's request log and "last used", in a group of
 * its own: a flood of requests never holds up the messages' read models, nor they it.
 */
export function createApiRequestConsumer(o: {
  kafka: Kafka;
  logger: Logger;
  db: Knex;
  deadLetters: DeadLetterSink;
  topicPrefix: string;
  metrics?: KafkaMetrics;
}): EventConsumer {
  return createEventConsumer<ApiRequestEvent>({
    kafka: o.kafka,
    logger: o.logger,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    groupId: `${o.topicPrefix}dashboard.api-requests`,
    topicPrefix: o.topicPrefix,
    topics: [topics.apiRequests],
    deadLetters: o.deadLetters,
    // Records gather for a moment: one transaction stores many.
    minFetchIntervalMs: 200,
    maxBatchSize: 1_000,
    handleBatch: async (events) => {
      await storeApiRequests(
        o.db,
        events.map((e) => apiRequestRow(e.record)).filter((r): r is ApiRequestRow => r !== undefined),
      );
    },
  });
}
