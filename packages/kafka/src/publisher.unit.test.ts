import type { Kafka, Message, Producer, ProducerConfig, RecordMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { createEventPublisher, headersOf, IncompleteWriteError } from './publisher.js';
import { topicName } from './topics.js';
import { logger, messageSent, messageTopic } from '../test/support.js';

/**
 * kafkajs's producer as the publisher uses it, over a topic of two partitions led by two brokers. Like
 * kafkajs, it places each record with the producer's partitioner; `acknowledge` says which partitions
 * its answer covers (kafkajs answers without a partition whose leader moved mid-retry: kafkajs#1303).
 */
function fakeKafka(acknowledge: (call: number, partitions: number[]) => number[]) {
  const producers: ProducerConfig[] = [];
  let calls = 0;
  const partitionMetadata = [
    { partitionId: 0, leader: 1, replicas: [1], isr: [1], partitionErrorCode: 0 },
    { partitionId: 1, leader: 2, replicas: [2], isr: [2], partitionErrorCode: 0 },
  ];
  const kafka = {
    // The publisher's readiness probe: no broker behind this fake.
    admin: () => ({
      connect: () => Promise.reject(new Error('no broker')),
      disconnect: () => Promise.resolve(),
    }),
    producer(config: ProducerConfig) {
      producers.push(config);
      const partitioner = config.createPartitioner!();
      return {
        events: { CONNECT: 'producer.connect', DISCONNECT: 'producer.disconnect' },
        on: () => () => undefined,
        connect: () => Promise.resolve(),
        disconnect: () => Promise.resolve(),
        sendBatch({ topicMessages }: { topicMessages: { topic: string; messages: Message[] }[] }) {
          const answers: RecordMetadata[] = [];
          for (const { topic, messages } of topicMessages) {
            const placed = new Set(
              messages.map((message) => partitioner({ topic, partitionMetadata, message })),
            );
            for (const partition of acknowledge(++calls, [...placed].sort()))
              answers.push({ topicName: topic, partition, errorCode: 0 });
          }
          return Promise.resolve(answers);
        },
      } as unknown as Producer;
    },
  } as unknown as Kafka;
  return { kafka, producers };
}

const events = (n: number) =>
  Array.from({ length: n }, (_, i) => ({
    topic: messageTopic,
    key: `message-${i}`,
    record: messageSent(`m${i}`),
  }));

describe('publishing', () => {
  it('fails a batch Kafka acknowledged without some of its partitions, then goes on with a new producer', async () => {
    const { kafka, producers } = fakeKafka((call, partitions) => (call === 1 ? [0] : partitions));
    const publisher = createEventPublisher({ kafka, logger });
    await publisher.connect();

    // Twenty keys land on both partitions; the answer leaves partition 1 out.
    const incomplete = await publisher.publish(events(20)).catch((e: unknown) => e);
    expect(incomplete).toBeInstanceOf(IncompleteWriteError);
    expect((incomplete as IncompleteWriteError).missing).toEqual([`${topicName(messageTopic)}/1`]);
    expect(publisher.healthy()).toBe(false);

    // Its producer may hold sequence numbers the broker already used: the next batch gets a new one.
    await publisher.publish(events(20));
    expect(producers).toHaveLength(2);
    expect(publisher.healthy()).toBe(true);
    await publisher.disconnect();
  });

  it('resolves once every partition the records went to is acknowledged', async () => {
    const { kafka, producers } = fakeKafka((_call, partitions) => partitions);
    const publisher = createEventPublisher({ kafka, logger });
    await publisher.connect();
    await publisher.publish(events(20));
    await publisher.publish(events(1));
    expect(producers).toHaveLength(1);
    await publisher.disconnect();
  });
});

describe('headersOf', () => {
  const type = 'mds.events.v1.MessageEvent';

  it('carries the W3C trace context of a traced event as traceparent and tracestate headers', () => {
    const record = messageSent('m-1');
    record.metadata.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    record.metadata.tracestate = 'vendor=1';
    expect(headersOf(record, type)).toEqual({
      'mds-event-type': 'MessageSent',
      'content-type': `application/x-protobuf; messageType=${type}`,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      tracestate: 'vendor=1',
    });
  });

  it('adds no trace header to an untraced event (tracing off): each header costs the client a buffer', () => {
    expect(Object.keys(headersOf(messageSent('m-2'), type))).toEqual(['mds-event-type', 'content-type']);
  });
});
