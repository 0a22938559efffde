import { topics, type DeliveryEvent } from '@mds/contracts';
import type { BatchContext, ConsumedEvent } from '@mds/kafka';
import type { DeliveryOptions } from './delivery-options.js';
import { canceledOutcome, keyOf, type CancelDelivery } from './events.js';
import type { OutcomePublisher } from './outcomes.js';

/**
 * Cancels messages (POST /api/v1/cancel) in the journal, where each message's first outcome wins: one no
 * call was claimed for ends failed CANCELED, and its outcome is published; one claimed, attempted or decided
 * already is not affected (its own outcome comes from its lane). A lane holding a canceled message finds the
 * outcome at its claim and makes no call.
 */
export async function cancelDeliveries(
  o: Pick<DeliveryOptions, 'journal' | 'provider' | 'deliveryTopic'>,
  outcomes: OutcomePublisher,
  events: ConsumedEvent<DeliveryEvent>[],
  batch: Pick<BatchContext, 'defer'>,
): Promise<void> {
  const at = new Date();
  const orders = events.map((e) => {
    const order = e.record as CancelDelivery;
    return {
      e,
      messageId: keyOf(order.event.value),
      outcome: canceledOutcome(order, at, o.provider.producer),
    };
  });
  const canceled = new Set(
    await o.journal.cancel(
      orders.map(({ e, messageId, outcome }) => ({
        messageId,
        partition: e.partition,
        request: Buffer.from(o.deliveryTopic.codec.encode(e.record)),
        outcome: Buffer.from(topics.message.codec.encode(outcome)),
      })),
    ),
  );
  for (const { e, messageId, outcome } of orders) {
    const ack = batch.defer(e);
    if (!canceled.delete(messageId)) ack();
    else outcomes.publish(messageId, '', outcome, undefined, { parked: true, acks: [ack] });
  }
}
