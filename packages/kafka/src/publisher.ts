import type { Complete, StreamRecord, TopicSpec } from '@mds/contracts';
import type { Logger } from '@mds/logging';
import type { IHeaders, Kafka, Message, Producer, TopicMessages } from 'kafkajs';
import type { KafkaMetrics } from './metrics.js';
import { topicName } from './topics.js';

export interface OutgoingEvent<R extends StreamRecord = StreamRecord> {
  topic: TopicSpec<R>;
  /** The aggregate id: every event of one aggregate goes to one partition, in order. */
  key: string;
  record: Complete<R>;
}

/**
 * Publishing did not finish in time. `written` says what is known: `no` (the record never left this
 * process, so it is certainly not in Kafka) or `unknown` (it was sent; Kafka may still store it).
 */
export class PublishTimeoutError extends Error {
  override readonly name = 'PublishTimeoutError';
  constructor(
    readonly written: 'no' | 'unknown',
    timeoutMs: number,
  ) {
    super(`Kafka did not acknowledge the event within ${timeoutMs} ms (written: ${written})`);
  }
}

export interface EventPublisher {
  connect(): Promise<void>;
  /**
   * Resolves once Kafka has every record from all in-sync replicas. Concurrent calls are grouped into one
   * produce request while the previous one is in flight, so many callers share one round trip.
   */
  publish(events: readonly OutgoingEvent[], options?: { timeoutMs?: number }): Promise<void>;
  disconnect(): Promise<void>;
  /** True while the producer is connected and its last request did not fail. */
  healthy(): boolean;
}

export interface EventPublisherOptions {
  kafka: Kafka;
  logger: Logger;
  topicPrefix?: string;
  metrics?: KafkaMetrics;
  /** Default bound on publish(); callers may pass their own. */
  timeoutMs?: number;
  /** Records in one produce request at most. */
  maxBatchRecords?: number;
}

interface Pending {
  topic: string;
  type: string;
  message: Message;
  state: 'queued' | 'sent' | 'settled';
  settle: (error?: Error) => void;
}

export function headersOf(record: Complete<StreamRecord>, messageType: string): IHeaders {
  return {
    'mds-event-type': record.metadata.type,
    'mds-event-id': record.metadata.eventId,
    'mds-producer': record.metadata.producer,
    'content-type': `application/x-protobuf; messageType=${messageType}`,
    ...(record.metadata.correlationId ? { 'mds-correlation-id': record.metadata.correlationId } : {}),
  };
}

/**
 * An idempotent producer (acks from all in-sync replicas, broker-side deduplication of retries) that
 * sends one request at a time and batches everything that arrives meanwhile.
 */
export function createEventPublisher(o: EventPublisherOptions): EventPublisher {
  const producer: Producer = o.kafka.producer({
    idempotent: true,
    // One produce request in flight keeps the idempotent sequence numbers of kafkajs in order.
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
  });
  const defaultTimeout = o.timeoutMs ?? 10_000;
  const maxBatch = o.maxBatchRecords ?? 1_000;
  let queue: Pending[] = [];
  let sending = false;
  let lastFailed = false;
  let connected = false;

  producer.on(producer.events.DISCONNECT, () => {
    connected = false;
  });
  producer.on(producer.events.CONNECT, () => {
    connected = true;
  });

  async function drain(): Promise<void> {
    if (sending) return;
    sending = true;
    try {
      while (queue.length > 0) {
        const batch = queue.slice(0, maxBatch);
        queue = queue.slice(batch.length);
        const byTopic = new Map<string, Message[]>();
        for (const p of batch) {
          p.state = 'sent';
          byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.message]);
        }
        const topicMessages: TopicMessages[] = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
        const started = performance.now();
        let error: Error | undefined;
        try {
          await producer.sendBatch({ topicMessages, acks: -1 });
          lastFailed = false;
        } catch (e) {
          error = e as Error;
          lastFailed = true;
          o.logger.error({ err: error, records: batch.length }, 'Kafka did not take a batch of events');
        }
        const seconds = (performance.now() - started) / 1000;
        o.metrics?.publishBatchSize.observe(batch.length);
        for (const p of batch) {
          if (!error) {
            o.metrics?.published.inc({ topic: p.topic, type: p.type });
            o.metrics?.publishSeconds.observe(seconds);
          } else {
            o.metrics?.publishFailures.inc({ topic: p.topic, reason: error.name });
          }
          p.settle(error);
        }
      }
    } finally {
      sending = false;
    }
  }

  function enqueue(event: OutgoingEvent, timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const topic = topicName(event.topic, o.topicPrefix);
      const pending: Pending = {
        topic,
        type: event.record.metadata.type,
        state: 'queued',
        message: {
          key: event.key,
          value: Buffer.from(event.topic.codec.encode(event.record)),
          headers: headersOf(event.record, event.topic.codec.messageType),
          timestamp: String(event.record.metadata.occurredAt?.getTime() ?? Date.now()),
        },
        settle: (error) => {
          if (pending.state === 'settled') return;
          pending.state = 'settled';
          clearTimeout(timer);
          if (error) reject(error);
          else resolve();
        },
      };
      const timer = setTimeout(() => {
        if (pending.state === 'settled') return;
        const written = pending.state === 'queued' ? 'no' : 'unknown';
        if (written === 'no') queue = queue.filter((q) => q !== pending);
        o.metrics?.publishFailures.inc({ topic, reason: 'timeout' });
        pending.state = 'settled';
        reject(new PublishTimeoutError(written, timeoutMs));
      }, timeoutMs);
      queue.push(pending);
    });
  }

  return {
    async connect() {
      await producer.connect();
      connected = true;
    },
    async publish(events, options) {
      if (events.length === 0) return;
      const timeoutMs = options?.timeoutMs ?? defaultTimeout;
      const acks = events.map((e) => enqueue(e, timeoutMs));
      void drain();
      await Promise.all(acks);
    },
    async disconnect() {
      // Let in-flight and queued records finish (each is bounded by its own timeout), then close.
      const deadline = Date.now() + defaultTimeout;
      while ((sending || queue.length > 0) && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 10));
      await producer.disconnect();
      connected = false;
    },
    healthy: () => connected && !lastFailed,
  };
}
