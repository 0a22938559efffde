import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { PartitionLag } from './consumer-lag.js';

/** Counters and timings of publishing and consuming, registered once per service registry. */
export interface KafkaMetrics {
  published: Counter<'topic' | 'type'>;
  publishFailures: Counter<'topic' | 'reason'>;
  publishSeconds: Histogram;
  publishBatchSize: Histogram;
  consumed: Counter<'topic' | 'type' | 'group'>;
  undecodable: Counter<'topic' | 'group'>;
  handlerFailures: Counter<'topic' | 'group'>;
  handlerSeconds: Histogram<'topic' | 'group'>;
  fetches: Counter<'group'>;
  commits: Counter<'group'>;
  setAside: Counter<'topic' | 'group'>;
  /** Exports the lag of one group's member (until the returned function is called). */
  lagOf(group: string, source: () => PartitionLag[]): () => void;
  /** Every request a Kafka client of the service made and Kafka answered, by client and API. */
  requests: Counter<'client' | 'api'>;
}

const cache = new WeakMap<Registry, KafkaMetrics>();

export function kafkaMetrics(registry: Registry): KafkaMetrics {
  const existing = cache.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const lagSources = new Map<string, () => PartitionLag[]>();
  new Gauge({
    name: 'mds_consumer_lag_records',
    help: 'Records in the log not yet handled by this member, on the partitions it owns (high watermark minus next offset); sum over replicas for the group',
    labelNames: ['group', 'topic'],
    registers,
    collect() {
      this.reset();
      for (const [group, source] of lagSources) {
        const byTopic = new Map<string, number>();
        for (const p of source()) byTopic.set(p.topic, (byTopic.get(p.topic) ?? 0) + p.records);
        for (const [topic, records] of byTopic) this.set({ group, topic }, records);
      }
    },
  });
  new Gauge({
    name: 'mds_consumer_lag_seconds',
    help: "Age of the oldest event this member has not handled yet, from the event's own occurredAt (0 when caught up); max over replicas for the group",
    labelNames: ['group', 'topic'],
    registers,
    collect() {
      this.reset();
      const now = Date.now();
      for (const [group, source] of lagSources) {
        const byTopic = new Map<string, number>();
        for (const p of source()) {
          const age = p.oldestPendingAt === undefined ? 0 : Math.max(0, (now - p.oldestPendingAt) / 1000);
          byTopic.set(p.topic, Math.max(byTopic.get(p.topic) ?? 0, age));
        }
        for (const [topic, seconds] of byTopic) this.set({ group, topic }, seconds);
      }
    },
  });
  const metrics: KafkaMetrics = {
    published: new Counter({
      name: 'mds_events_published_total',
      help: 'Events acknowledged by Kafka',
      labelNames: ['topic', 'type'],
      registers,
    }),
    publishFailures: new Counter({
      name: 'mds_events_publish_failures_total',
      help: 'Events Kafka did not acknowledge in time or refused',
      labelNames: ['topic', 'reason'],
      registers,
    }),
    publishSeconds: new Histogram({
      name: 'mds_event_publish_seconds',
      help: 'Time from publish() to acknowledgement by all in-sync replicas',
      buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    publishBatchSize: new Histogram({
      name: 'mds_event_publish_batch_size',
      help: 'Records per produce request',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    }),
    consumed: new Counter({
      name: 'mds_events_consumed_total',
      help: 'Events handled and committed',
      labelNames: ['topic', 'type', 'group'],
      registers,
    }),
    undecodable: new Counter({
      name: 'mds_events_undecodable_total',
      help: 'Records skipped because this build cannot decode them',
      labelNames: ['topic', 'group'],
      registers,
    }),
    handlerFailures: new Counter({
      name: 'mds_event_handler_failures_total',
      help: 'Handler failures (a transient one is retried; else the batch is narrowed down to the record that fails, which is set aside)',
      labelNames: ['topic', 'group'],
      registers,
    }),
    handlerSeconds: new Histogram({
      name: 'mds_event_handler_seconds',
      help: 'Time to handle one batch of events',
      labelNames: ['topic', 'group'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers,
    }),
    fetches: new Counter({
      name: 'mds_kafka_fetches_total',
      help: 'Fetch requests a consumer group made (an idle one waits up to its max wait in each)',
      labelNames: ['group'],
      registers,
    }),
    commits: new Counter({
      name: 'mds_kafka_offset_commits_total',
      help: 'Offset commits a consumer group made',
      labelNames: ['group'],
      registers,
    }),
    setAside: new Counter({
      name: 'mds_consumer_records_set_aside_total',
      help: "Records a consumer group's handler could not handle, set aside in dead_letters so that their partition goes on",
      labelNames: ['topic', 'group'],
      registers,
    }),
    lagOf: (group, source) => {
      lagSources.set(group, source);
      return () => {
        if (lagSources.get(group) === source) lagSources.delete(group);
      };
    },
    requests: new Counter({
      name: 'mds_kafka_requests_total',
      help: 'Requests Kafka answered, of every kind (Produce, Fetch, OffsetCommit, Heartbeat, Metadata, ...), by client (producer, or consumer:<group>) and API',
      labelNames: ['client', 'api'],
      registers,
    }),
  };
  cache.set(registry, metrics);
  return metrics;
}
