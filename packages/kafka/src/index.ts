export { createKafkaClient, kafkaSettingsFromEnv, type KafkaSettings } from './client.js';
export {
  partitionCountOf,
  partitionOfKey,
  provisionTopics,
  topicConfig,
  topicName,
  type ProvisionOptions,
  type ExistingTopics,
} from './topics.js';
/** The client every service builds (createKafkaClient): its type, without importing kafkajs. */
export type { Kafka } from 'kafkajs';
export {
  createEventPublisher,
  IncompleteWriteError,
  PublishTimeoutError,
  headersOf,
  type EventPublisher,
  type OutgoingEvent,
} from './publisher.js';
export {
  createEventConsumer,
  type BatchContext,
  type ConsumedEvent,
  type EventConsumer,
  type EventConsumerOptions,
} from './consumer.js';
export { NO_DEAD_LETTER_TABLE, type DeadLetterSink, type SetAsideRecord } from './dead-letters.js';
export { RefusedRecordError, failureKind, type FailureKind } from './failures.js';
export type { PartitionLag } from './consumer-lag.js';
export { kafkaMetrics, type KafkaMetrics } from './metrics.js';
export { readToEnd } from './read-to-end.js';
export { topicOffsets, topicOffsetsAt } from './partition-offsets.js';
export { createLogFollower, type LogFollowerOptions } from './follower.js';
