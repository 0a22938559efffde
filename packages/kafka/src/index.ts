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
  type UndecodableRecord,
} from './consumer.js';
export { kafkaMetrics, type KafkaMetrics } from './metrics.js';
export { readToEnd } from './read-to-end.js';
