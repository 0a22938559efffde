import { topics, type DeliveryEvent } from '@mds/contracts';
import type { BatchContext, ConsumedEvent } from '@mds/kafka';
import { SpanKind, startHop } from '@mds/telemetry';
import type { DeliveryOptions } from './delivery-options.js';
import { keyOf, unroutableOutcome, type UnroutableDelivery } from './events.js';
import type { OutcomePublisher } from './outcomes.js';

/**
 * Fails messages the registry found no route for, each by writing its row with the outcome (the first
 * decision of a message to reach the journal is its one outcome), then publishes the outcomes.
 */
export async function failUnroutable(
  o: Pick<DeliveryOptions, 'journal' | 'provider' | 'deliveryTopic'>,
  outcomes: OutcomePublisher,
  events: ConsumedEvent<DeliveryEvent>[],
  batch: Pick<BatchContext, 'defer'>,
): Promise<void> {
  const orders = events.map((e) => ({ e, order: e.record as UnroutableDelivery, at: new Date() }));
  const outcomesOf = new Map(
    orders.map(({ order, at }) => {
      const hop = startHop(`${o.provider.producer} unroutable`, order.metadata, {
        kind: SpanKind.CONSUMER,
      });
      const outcome = hop.run(() => unroutableOutcome(order, at, o.provider.producer));
      hop.end();
      return [keyOf(order.event.value), outcome];
    }),
  );
  const existing = await o.journal.decideAtOnce(
    orders.map(({ e, order }) => ({
      messageId: keyOf(order.event.value),
      botId: '',
      partition: e.partition,
      request: Buffer.from(o.deliveryTopic.codec.encode(e.record)),
      deliverBefore: order.event.value.acceptedAt ?? new Date(0),
      outcome: Buffer.from(topics.message.codec.encode(outcomesOf.get(keyOf(order.event.value))!)),
    })),
  );
  const rows = new Map(existing.map((r) => [r.messageId, r]));
  for (const { e, order } of orders) {
    const ack = batch.defer(e);
    const messageId = keyOf(order.event.value);
    const row = rows.get(messageId);
    if (!row)
      outcomes.publish(messageId, '', outcomesOf.get(messageId)!, undefined, {
        parked: false,
        acks: [ack],
      });
    else if (row.status === 'sent' || row.status === 'failed') outcomes.republish(row, [ack]);
    // Routed before it was found unroutable: its lane decides it.
    else ack();
  }
}
