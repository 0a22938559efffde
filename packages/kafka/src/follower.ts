import { randomUUID } from 'node:crypto';
import type { Complete, StreamRecord, TopicSpec } from '@mds/contracts';
import type { Logger } from '@mds/logging';
import type { Kafka } from 'kafkajs';
import { createEventConsumer, type EventConsumer } from './consumer.js';
import type { KafkaMetrics } from './metrics.js';

export interface LogFollowerOptions<R extends StreamRecord> {
  kafka: Kafka;
  logger: Logger;
  metrics?: KafkaMetrics;
  topicPrefix: string | undefined;
  /**
   * What follows, named after its service (`gateway.api-keys`): the group is this plus a random suffix, one
   * group per process, under the service's group prefix (its Kafka user's ACLs).
   */
  name: string;
  topics: readonly TopicSpec<R>[];
  /** The new records, each partition's in order. Whatever it throws is retried as any batch is. */
  onEvents(events: Complete<R>[]): void | Promise<void>;
  /**
   * Whether the follower owns partitions (true once joined with some; false while a rebalance is on, or it
   * stops): until then changes may go unseen, and what a follower's cache holds is to be trusted for a moment
   * only.
   */
  onFollowing?(following: boolean): void;
  /** A record this build cannot read (it may have changed anything): drop what depends on the log. */
  onUnreadable?(): void;
}

/**
 * Every replica sees every new record of the topics, for a cache of its own to act on at once (a key revoked,
 * an endpoint changed): a consumer group per process, from the end of the log (the cache starts empty or
 * loaded and reads what it needs), committing nothing, so its group leaves no trace once it stops. Not for
 * state that must survive a restart: that is a group shared by the replicas that commits its offsets.
 */
export function createLogFollower<R extends StreamRecord>(o: LogFollowerOptions<R>): EventConsumer {
  return createEventConsumer<R>({
    kafka: o.kafka,
    logger: o.logger,
    ...(o.metrics ? { metrics: o.metrics } : {}),
    groupId: `${o.topicPrefix ?? ''}${o.name}.${randomUUID()}`,
    topicPrefix: o.topicPrefix,
    topics: o.topics,
    fromBeginning: false,
    commitOffsets: false,
    onAssignment: (partitions) => o.onFollowing?.([...partitions.values()].some((p) => p.length > 0)),
    deadLetters: {
      setAside: () => {
        o.onUnreadable?.();
        return Promise.resolve();
      },
    },
    handleBatch: async (events) => {
      await o.onEvents(events.map((e) => e.record));
    },
  });
}
