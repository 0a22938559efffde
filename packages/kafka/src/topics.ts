import { retentionMs, type TopicSpec } from '@mds/contracts';
import kafkajs, { type Admin, type Kafka } from 'kafkajs';
import type { Logger } from '@mds/logging';

export function topicName(spec: Pick<TopicSpec, 'name'>, prefix = ''): string {
  return `${prefix}${spec.name}`;
}

export interface ProvisionOptions {
  prefix?: string;
  replicationFactor?: number;
  historyRetentionDays?: number;
  /** Fewer partitions, for tests that make many topics; production uses the declared counts. */
  partitions?: number;
}

/**
 * What to do with topics that exist: `configure` brings their retention and min ISR to the declared values
 * (the deploy step, whose Kafka user may AlterConfigs); `leave` touches them not at all, so a running service,
 * allowed only Describe, Read and Write on its topics, starts (it still creates a missing topic where it may,
 * as a local broker without ACLs allows).
 */
export type ExistingTopics = 'configure' | 'leave';

export function topicConfig(spec: TopicSpec, options: ProvisionOptions): Record<string, string> {
  const replicationFactor = options.replicationFactor ?? 1;
  const historyDays = options.historyRetentionDays ?? 365;
  return {
    'cleanup.policy': 'delete',
    'retention.ms': String(retentionMs(spec.retention, historyDays)),
    // With 3 replicas, an acknowledged write survives the loss of one broker.
    'min.insync.replicas': String(Math.min(2, replicationFactor)),
    'message.timestamp.type': 'CreateTime',
  };
}

/**
 * Creates the declared topics that are missing and, with `existing: 'configure'` (the default), brings
 * retention and min ISR of existing ones to the declared values. Safe to run any number of times and from
 * several replicas at once. A topic with fewer partitions than declared is reported, not grown: more
 * partitions re-map keys to partitions and so break per-key order for events already written; grow it
 * deliberately, between deploys.
 */
export async function provisionTopics(
  kafka: Kafka,
  specs: readonly TopicSpec[],
  options: ProvisionOptions & { logger?: Logger; existing?: ExistingTopics } = {},
): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((s) => !existing.has(topicName(s, options.prefix)));
    if (missing.length > 0) {
      await admin.createTopics({
        // kafkajs's own wait gives up on UNKNOWN_TOPIC_OR_PARTITION, which KRaft answers for a moment
        // after creation; waitForLeaders below retries until every partition has a leader.
        waitForLeaders: false,
        topics: missing.map((spec) => ({
          topic: topicName(spec, options.prefix),
          numPartitions: options.partitions ?? spec.partitions,
          replicationFactor: options.replicationFactor ?? 1,
          configEntries: Object.entries(topicConfig(spec, options)).map(([name, value]) => ({ name, value })),
        })),
      });
      await waitForLeaders(
        admin,
        missing.map((s) => topicName(s, options.prefix)),
      );
      options.logger?.info({ topics: missing.map((s) => topicName(s, options.prefix)) }, 'created topics');
    }
    const present = specs.filter((s) => existing.has(topicName(s, options.prefix)));
    if (present.length === 0) return;
    const metadata = await admin.fetchTopicMetadata({
      topics: present.map((s) => topicName(s, options.prefix)),
    });
    for (const spec of present) {
      const want = options.partitions ?? spec.partitions;
      const have =
        metadata.topics.find((t) => t.name === topicName(spec, options.prefix))?.partitions.length ?? want;
      if (have < want) {
        options.logger?.warn(
          { topic: topicName(spec, options.prefix), have, want },
          'topic has fewer partitions than declared',
        );
      }
    }
    if (options.existing === 'leave') return;
    await admin.alterConfigs({
      validateOnly: false,
      resources: present.map((spec) => ({
        type: kafkajs.ConfigResourceTypes.TOPIC,
        name: topicName(spec, options.prefix),
        configEntries: Object.entries(topicConfig(spec, options)).map(([name, value]) => ({ name, value })),
      })),
    });
  } finally {
    await admin.disconnect();
  }
}

async function waitForLeaders(admin: Admin, names: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const metadata = await admin.fetchTopicMetadata({ topics: names });
      const ready = metadata.topics.every(
        (t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0),
      );
      if (ready && metadata.topics.length === names.length) return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline)
      throw new Error(`topics ${names.join(', ')} have no leaders after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * The partition a key's records go to under the producers' default partitioner (murmur2, as Java
 * clients): the owner of that partition of a topic keyed by it owns what the key names.
 */
export function partitionOfKey(key: string, partitionCount: number): number {
  const partitioner = kafkajs.Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: partitionCount }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    replicas: [0],
    isr: [0],
    partitionErrorCode: 0,
  }));
  return partitioner({ topic: 'any', partitionMetadata, message: { key, value: null } });
}

/** How many partitions a topic has. */
export async function partitionCountOf(kafka: Kafka, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    return metadata.topics[0]!.partitions.length;
  } finally {
    await admin.disconnect();
  }
}
