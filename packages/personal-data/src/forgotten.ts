import { topics, type ClientEvent } from '@mds/contracts';
import {
  createEventConsumer,
  type DeadLetterSink,
  type EventConsumer,
  type Kafka,
  type KafkaMetrics,
} from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { PersonKeyCache } from './keys.js';

/**
 * A service's consumer of ClientForgotten (mds.client.v1): drops the person's keys from its cache and
 * deletes what it holds of them (`purge`, idempotent: a forget handled again finds nothing). The group is
 * the service's own and starts at the beginning: a person forgotten while the service was down is still
 * purged. Other replicas drop the key when their cache entry expires (PERSON_KEY_CACHE_TTL_MS).
 */
export function forgottenConsumer(o: {
  kafka: Kafka;
  logger: Logger;
  metrics?: KafkaMetrics;
  topicPrefix?: string | undefined;
  /** The group, without the prefix, e.g. "gateway.forget". */
  group: string;
  /** The service's key cache, when it opens sealed data. */
  keyCache?: PersonKeyCache | undefined;
  /** Deletes what the service holds of the person (none where its tables keep personal data sealed). */
  purge?: (companyId: string, subjectId: string) => Promise<void>;
  /** The service's dead_letters table (ServiceFoundation's `deadLetters`). */
  deadLetters: DeadLetterSink;
}): EventConsumer {
  return createEventConsumer<ClientEvent>({
    kafka: o.kafka,
    logger: o.logger,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    groupId: `${o.topicPrefix ?? ''}${o.group}`,
    topicPrefix: o.topicPrefix,
    topics: [topics.client],
    deadLetters: o.deadLetters,
    handleBatch: async (events) => {
      for (const { record } of events) {
        if (record.event.$case !== 'clientForgotten') continue;
        const { companyId } = record.metadata;
        const { subjectId } = record.event.value;
        o.keyCache?.forgetSubject(companyId, subjectId);
        await o.purge?.(companyId, subjectId);
        o.logger.info({ companyId, subjectId }, 'forgot a client');
      }
    },
  });
}
