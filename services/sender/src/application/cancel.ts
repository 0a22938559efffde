import { topics, type DeliveryEvent, type FallbackRoute } from '@mds/contracts';
import type { BatchContext, ConsumedEvent } from '@mds/kafka';
import type { DeliveryOptions } from './delivery-options.js';
import { canceledOutcome, keyOf, type CancelDelivery } from './events.js';
import type { OutcomePublisher } from './outcomes.js';

type Options = Pick<DeliveryOptions, 'journal' | 'provider' | 'deliveryTopic'>;

/**
 * The routes of fallback channels whose work orders the journal holds, by key: a cancel names the bot as
 * routed (the gateway knows only the name requested, empty for the company's default bot). Read only for
 * cancels of messages with a fallback.
 */
async function routedChannels(o: Options, keys: string[]): Promise<Map<string, FallbackRoute>> {
  if (keys.length === 0) return new Map();
  return new Map(
    (await o.journal.rowsOf(keys)).flatMap((row) => {
      const event = o.deliveryTopic.codec.decode(row.request).event;
      return event?.$case === 'deliveryRequested' && event.value.fallback
        ? [[row.messageId, event.value.fallback] as const]
        : [];
    }),
  );
}

/**
 * Cancels messages (POST /api/v1/cancel) in the journal, where each message's first outcome wins: one no
 * call was claimed for ends failed CANCELED, and its outcome is published; one claimed, attempted or decided
 * already is not affected (its own outcome comes from its lane). A lane holding a canceled message finds the
 * outcome at its claim and makes no call. A message with a fallback is canceled on the channel it names.
 */
export async function cancelDeliveries(
  o: Options,
  outcomes: OutcomePublisher,
  events: ConsumedEvent<DeliveryEvent>[],
  batch: Pick<BatchContext, 'defer'>,
): Promise<void> {
  const at = new Date();
  const cancels = events.map((e) => ({ e, order: e.record as CancelDelivery }));
  const routed = await routedChannels(
    o,
    cancels.filter(({ order }) => order.event.value.fallback).map(({ order }) => keyOf(order.event.value)),
  );
  const orders = cancels.map(({ e, order }) => {
    const messageId = keyOf(order.event.value);
    const fallback = routed.get(messageId) ?? order.event.value.fallback;
    const named = { ...order, event: { ...order.event, value: { ...order.event.value, fallback } } };
    return { e, messageId, outcome: canceledOutcome(named, at, o.provider.producer) };
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
