import { derivedEventId, topics, type ApiRequestEvent, type ApiRequestServed } from '@mds/contracts';
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

/**
 * The request log's record as rows: one for a record of one request, one per entry for a key's requests of a
 * publishing period (each entry's id derived from the record's); none for a record naming no company or key.
 */
export function apiRequestRows(record: ApiRequestEvent): ApiRequestRow[] {
  const { metadata, event } = record;
  if (!metadata?.occurredAt || !UUID.test(metadata.eventId) || !UUID.test(metadata.companyId)) return [];
  const row = (v: ApiRequestServed, recordId: string, at: Date): ApiRequestRow => ({
    recordId,
    companyId: metadata.companyId,
    keyId: v.keyId,
    at,
    operation: v.operation,
    status: v.status,
    eventId: v.subjectEventId,
    requestId: v.requestId,
    durationMs: v.durationMs,
  });
  if (event?.$case === 'apiRequestServed')
    return event.value.keyId ? [row(event.value, metadata.eventId, metadata.occurredAt)] : [];
  if (event?.$case === 'apiRequestsServed')
    return event.value.requests
      .map((v, i) =>
        row(v, derivedEventId(metadata.eventId, `request/${i}`), v.receivedAt ?? metadata.occurredAt!),
      )
      .filter((r) => r.keyId);
  return [];
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
        events.flatMap((e) => apiRequestRows(e.record)),
      );
    },
  });
}
