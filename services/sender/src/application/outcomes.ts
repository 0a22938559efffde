import { retryUntil } from '@mds/async';
import { topics } from '@mds/contracts';
import type { OutgoingEvent } from '@mds/kafka';
import type { Logger } from '@mds/logging';
import type { EventLog, Journal, StoredDelivery } from './ports.js';

export interface OutcomePublisher {
  /**
   * Publishes a decided outcome (and its side effect) until Kafka has it, then lets go of what held it.
   * `journalKey`: its row's (the message id, or a fallback channel's key); the outcome is keyed by its message.
   */
  publish(
    journalKey: string,
    botId: string,
    outcome: OutgoingEvent['record'],
    sideEffect: OutgoingEvent['record'] | undefined,
    then: { parked: boolean; acks: readonly (() => void)[] },
  ): void;
  /** Publishes again the outcome a journal row holds (decided here before, or by another replica). */
  republish(row: StoredDelivery, acks: readonly (() => void)[]): void;
}

/**
 * Publishes decided outcomes until Kafka has them, then lets go of what held them: the message's Kafka
 * offsets (a message that never left memory), or its journal row's publication mark (a parked message).
 */
export function createOutcomePublisher(o: {
  publisher: EventLog;
  journal: Pick<Journal, 'markPublished'>;
  logger: Logger;
  /** Aborted once the deliveries stop: publications are no longer retried. */
  stopped: AbortSignal;
  track: (work: Promise<void>) => void;
}): OutcomePublisher {
  /** The acks waiting on each publication in flight, by journal key. */
  const publishing = new Map<string, (() => void)[]>();

  return {
    publish(journalKey, botId, outcome, sideEffect, then) {
      // The same outcome again (a lane finding it decided while its cancel's publication is in flight, a work
      // order read twice): what holds this one is let go of with the publication under way, never dropped,
      // which would hold its Kafka offset for good.
      const waiting = publishing.get(journalKey);
      if (waiting) {
        waiting.push(...then.acks);
        return;
      }
      const acks = [...then.acks];
      publishing.set(journalKey, acks);
      const messageId = outcome.metadata.streamId;
      const events: OutgoingEvent[] = [{ topic: topics.message, key: messageId, record: outcome }];
      if (sideEffect) events.push({ topic: topics.botUpdate, key: botId, record: sideEffect });
      const work = retryUntil(
        async () => {
          await o.publisher.publish(events);
          if (then.parked) await o.journal.markPublished(journalKey);
        },
        {
          initialMs: 500,
          maxMs: 30_000,
          shouldRetry: () => !o.stopped.aborted,
          onRetry: (error) =>
            o.logger.warn({ err: error, messageId }, 'publishing an outcome failed; retrying'),
        },
      )
        .then(
          () => {
            for (const ack of acks) ack();
          },
          // Stored, so never lost: its offset or its row brings it back to whoever owns the partition next.
          () => undefined,
        )
        .finally(() => publishing.delete(journalKey));
      o.track(work);
    },

    republish(row, acks) {
      const outcome = topics.message.codec.decode(row.outcome!);
      const side = row.sideEffect ? topics.botUpdate.codec.decode(row.sideEffect) : undefined;
      this.publish(row.messageId, row.botId, outcome, side, {
        parked: row.spilled && !row.published,
        acks,
      });
    },
  };
}
